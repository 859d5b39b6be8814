"""The personal store: every client's personal part, gathered for a cohort and written back."""
import numpy as np
import pytest

from tff_idp.engine.personal_state import PersonalStore
from tff_idp.models.split import ParameterSplit


def _split():
    masks = (None, np.array([[1, 0], [1, 0]], np.float32), np.zeros(2, np.float32))
    return ParameterSplit("test", masks, ((3,), (2, 2), (2,)))


def test_initial_rows_are_the_personal_coordinates_of_the_initial_model():
    w0 = [np.ones(3), np.arange(4.0).reshape(2, 2), np.array([5.0, 6.0])]
    store = PersonalStore(w0, _split(), num_clients=4)
    kernel, bias = store.values
    assert kernel.shape == (4, 2, 2) and bias.shape == (4, 2)
    assert np.all(kernel == [[0, 1], [0, 3]]) and np.all(bias == [5, 6])   # shared coords: 0
    assert store.nbytes == 4 * (4 + 2) * 4


def test_gather_and_scatter_follow_the_cohort_order_and_leave_the_others():
    store = PersonalStore([np.zeros(3), np.zeros((2, 2)), np.zeros(2)], _split(), 5)
    cohort = [3, 0, 4]
    rows = store.gather(cohort)
    new = [r + np.array(cohort, np.float32).reshape((3,) + (1,) * (r.ndim - 1)) + 1
           for r in rows]
    store.scatter(cohort, new)
    for c in range(5):
        expect = c + 1.0 if c in cohort else 0.0
        assert np.all(store.values[1][c] == expect)
    snap = store.snapshot()
    store.scatter([1], [np.full((1, 2, 2), 9.0), np.full((1, 2), 9.0)])
    store.restore(snap)
    assert np.all(store.values[0][1] == 0.0)


def test_a_repeated_client_or_a_wrong_shape_is_refused():
    store = PersonalStore([np.zeros(3), np.zeros((2, 2)), np.zeros(2)], _split(), 3)
    with pytest.raises(ValueError, match="twice"):
        store.scatter([1, 1], store.gather([1, 1]))
    with pytest.raises(ValueError, match="does not fit"):
        store.restore([np.zeros((2, 2, 2)), np.zeros((3, 2))])
