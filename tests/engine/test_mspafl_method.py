"""MS-PAFL and its local-DP baseline on both backends (paper 002)."""
import numpy as np
import pytest
import tensorflow as tf

from tff_idp.queries import LocalGaussianQuery
from tff_idp.engine import loop
from tff_idp.methods import METHODS
from tff_idp.privacy import mspafl

from .helpers import capture, experiment

TOL = 1e-5


SETTINGS = ('dataset="synthetic:adult"', 'model="logistic_nobias"', "num_clients=40",
            "expected_rate=0.5", "rounds=3", "local_steps=5", "batch_size=5", "local_lr=0.1",
            "local_epsilon=1.0", "local_delta=1e-4", "delta=1e-4", "budgets=[1.0]",
            "group_ratios=[1.0]", 'partition="shards"')


def _experiment(methods, extra=()):
    return experiment(methods, SETTINGS, extra)


def _run(exp, method, backend, monkeypatch, on_round=None):
    seen = {}
    capture(monkeypatch, backend, seen)
    rows, summary, _ = loop.run_method(exp, method, progress=False, backend=backend,
                                       on_round=on_round and (lambda r: on_round(seen, r)))
    return seen, rows, summary


@pytest.mark.parametrize("method,sampling", [("ms_pafl", "wor"), ("ms_pafl", "wr"),
                                             ("ldp_fedavg", "wor")])
def test_both_backends_agree_after_three_rounds(method, sampling, monkeypatch):
    exp = _experiment(method, [f'data_sampling="{sampling}"'])
    tff, rows, summary = _run(exp, method, "tff", monkeypatch)
    fast, _, _ = _run(exp, method, "fast", monkeypatch)
    for a, b in zip(tff["runner"].weights + tff["store"].values,
                    fast["runner"].weights + fast["store"].values):
        np.testing.assert_allclose(a, b, atol=TOL)
    sizes = {r["cohort"] for r in rows}
    assert len(sizes) > 1 or method == "ldp_fedavg"       # check-in: the cohort varies
    privacy = summary.privacy
    assert privacy["guarantee"]["noise_drawn_by"].startswith("each client")
    if sampling == "wr":
        assert "no accountant" in privacy["client_epsilon_rdp"]


def test_private_halves_never_leave_the_client(monkeypatch):
    """Every upload (before and after its noise) and the server's model are zero / initial
    on the private coordinates."""
    exp = _experiment("ms_pafl")
    uploads = []
    real = LocalGaussianQuery.client_math

    def spy(self, tensors, *a, **k):
        out = real(self, tensors, *a, **k)
        uploads.append(([t.numpy() for t in tensors], [t.numpy() for t in out[0]]))
        return out

    monkeypatch.setattr(LocalGaussianQuery, "client_math", spy)
    w0 = loop.initial_weights(exp, loop.build_model_fn(exp))
    tf.config.run_functions_eagerly(True)            # the spy sees the values
    try:
        seen, _, _ = _run(exp, "ms_pafl", "fast", monkeypatch)
    finally:
        tf.config.run_functions_eagerly(False)
    private = 1.0 - seen["runner"].program.masks[0]
    assert private.sum() == 14                     # rows 0-6 of the 14 x 2 kernel
    assert uploads
    for sent, noised in uploads:
        assert np.all(sent[0] * private == 0) and np.all(noised[0] * private == 0)
        assert np.any(noised[0] * (1 - private) != 0)
    np.testing.assert_array_equal(seen["runner"].weights[0] * private, w0[0] * private)


def test_each_upload_carries_the_full_sigma_on_public_coordinates():
    sigma = mspafl.local_noise_std(1.0, 1e-4, 1.0)
    mask = np.zeros((14, 2), np.float32)
    mask[7:] = 1.0
    factory = LocalGaussianQuery(1.0, sigma, 20.0, 0.9).on_shared([mask])
    k = 4000
    noised, *_ = factory.client_math(
        [tf.zeros([k, 14, 2])], tf.ones([k, 1]), tf.stack([tf.zeros(k, tf.int32),
                                                            tf.range(k)], 1),
        factory.initial_state_tensors(), tf.constant([float(k)]))
    values = noised[0].numpy()
    assert np.all(values[:, :7] == 0)
    assert np.var(values[:, 7:]) == pytest.approx(sigma ** 2, rel=0.03)  # k x 14 draws


def test_server_replaces_the_public_part_by_the_sum_over_nu_times_the_count():
    factory = LocalGaussianQuery(1.0, 0.0, 2.0, 0.5)
    sums = [tf.constant([[[2.0, 4.0]]])]             # [M=1, 1, 2]
    update, _ = factory.server_math(sums, tf.zeros([]), factory.initial_state_tensors(),
                                    tf.constant([4.0]))
    np.testing.assert_allclose(update[0].numpy(), [[1.0, 2.0]])     # 2 / (0.5 * 4)
    mask = np.array([[0.0, 1.0]], np.float32)
    new = METHODS["ms_pafl"].server_update([tf.constant([[7.0, 7.0]])],
                                           [update[0] * mask], 1.0, [mask])
    np.testing.assert_allclose(new[0].numpy(), [[7.0, 2.0]])


def test_an_empty_round_keeps_the_model(monkeypatch):
    exp = _experiment("ms_pafl", ["expected_rate=0.02", "rounds=5"])
    after = [loop.initial_weights(exp, loop.build_model_fn(exp))]
    seen, rows, _ = _run(exp, "ms_pafl", "fast", monkeypatch,
                         on_round=lambda s, r: after.append(s["runner"].weights))
    sizes = [r["cohort"] for r in rows]
    assert 0 in sizes and any(sizes), sizes        # this seed has empty and busy rounds
    for prev, now, row in zip(after, after[1:], rows):
        if row["cohort"] == 0:
            for a, b in zip(prev, now):
                np.testing.assert_array_equal(a, b)


def test_ldp_fedavg_is_also_tested_on_each_clients_classes(monkeypatch):
    """Method.client_tests: LDP-FedAvg's one model on each client's own test examples (the
    labels of its shard), mean over clients, recomputed here from the final weights."""
    exp = _experiment("ldp_fedavg")
    seen, rows, summary = _run(exp, "ldp_fedavg", "fast", monkeypatch)
    (kernel,) = seen["runner"].weights                 # logistic_nobias: logits = x W
    d = exp.data
    pred = np.argmax(d.x_test.reshape(len(d.x_test), -1) @ kernel, axis=1)
    accs = [np.mean(pred[m] == d.y_test[m]) for m in
            (np.isin(d.y_test, np.unique(d.y_train[idx])) for idx in exp.client_indices)
            if m.any()]
    assert rows[-1]["client_test_accuracy"] == pytest.approx(np.mean(accs), abs=1e-9)
    assert summary.final_client_test_accuracy == rows[-1]["client_test_accuracy"]
    assert summary.final_test_accuracy == rows[-1]["test_accuracy"]   # still the headline
    assert len({round(a, 6) for a in accs}) > 1        # shards: the clients' sets differ
    _, ms_rows, _ = _run(_experiment("ms_pafl"), "ms_pafl", "fast", monkeypatch)
    assert "client_test_accuracy" not in ms_rows[-1]   # its own models are what it reports
