"""The data layer's client datasets (issue 58 item 5): a round's training order from its key,
and a cohort's batches padded with 1/0 weights that cover exactly each client's examples."""
import numpy as np

from tff_idp.data.client_dataset import (ClientDataset, cohort_batches, cohort_rows,
                                         padded_order, training_order)


def test_an_order_of_epochs_is_that_many_permutations_and_steps_take_full_batches():
    order = training_order(7, [0, 3, 5, 2], epochs=3)
    assert len(order) == 21
    for e in range(3):
        assert sorted(order[7 * e:7 * (e + 1)]) == list(range(7))
    steps = training_order(7, [0, 3, 5, 2], need=10)          # 2 batches of 5: 2 passes
    assert len(steps) == 10 and sorted(steps[:7]) == list(range(7))
    assert np.array_equal(training_order(7, [0, 3, 5, 2], epochs=3), order)  # same key
    assert not np.array_equal(training_order(7, [0, 3, 6, 2], epochs=3), order)


def test_with_replacement_draws_uniformly_and_independently():
    draws = training_order(4, [1], need=40_000, with_replacement=True)
    counts = np.bincount(draws, minlength=4)
    assert len(draws) == 40_000 and np.all(np.abs(counts - 10_000) < 4 * 87)  # 4 std


def test_cohort_batches_pad_each_clients_short_last_batch_with_weight_zero():
    a = ClientDataset(np.arange(5.0)[:, None], np.arange(5))
    b = ClientDataset(np.arange(10.0, 12.0)[:, None], np.arange(10, 12))
    xs, ys, ws = cohort_batches([a, b], batch=2)
    assert xs.shape == (2, 3, 2, 1) and ys.shape == (2, 3, 2) and ws.shape == (2, 3, 2)
    assert ws.sum(axis=(1, 2)).tolist() == [5.0, 2.0]
    assert ys[0][ws[0] > 0].tolist() == [0, 1, 2, 3, 4]     # every example once, in order
    assert ys[1][ws[1] > 0].tolist() == [10, 11]
    assert ws[1, 1:].sum() == 0                              # all-padding steps: no-ops


def test_full_steps_are_not_padded_and_rows_gather_the_same_batches():
    a = ClientDataset(np.arange(6.0)[:, None], np.arange(6))
    xs, ys, ws = cohort_batches([a, a.take([5, 4, 3, 2, 1, 0])], batch=3, steps=2)
    assert ws is None and ys[1].tolist() == [[5, 4, 3], [2, 1, 0]]
    rows_x, rows_y = cohort_rows([a, ClientDataset(a.x[:4], a.y[:4])])
    order, w = padded_order([np.array([3, 1, 0, 2, 5, 4]), np.array([2, 0, 3, 1])], 4)
    gathered = np.take_along_axis(rows_y, order.reshape(2, -1), axis=1).reshape(order.shape)
    assert gathered[0][w[0] > 0].tolist() == [3, 1, 0, 2, 5, 4]
    assert gathered[1][w[1] > 0].tolist() == [2, 0, 3, 1]
    assert w.sum() == 10
