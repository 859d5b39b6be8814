"""PFA: principal directions without a d x d matrix, and the projection inside the factory."""
import collections

import numpy as np
import pytest

from tff_idp.runtime import import_tff

tff = import_tff()
from tff_idp.aggregators import PFAFactory, principal_directions  # noqa: E402


def test_principal_direction_of_a_known_subspace():
    rng = np.random.default_rng(0)
    d = 500
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    rows = np.outer(rng.normal(size=12) * 5, u) + 0.01 * rng.normal(size=(12, d)) + 3.0
    rows = np.vstack([rows, np.zeros((4, d))]).astype(np.float32)   # 4 unused rows
    v = principal_directions(rows, 12, 1).numpy()[:, 0]
    assert abs(abs(v @ u) - 1) < 1e-3
    two = principal_directions(rows, 12, 2).numpy()
    assert two.shape == (d, 2) and np.allclose(np.linalg.norm(two, axis=0), 1, atol=1e-5)


def _client(vec, group, slot, seed):
    onehot = np.zeros(3, np.float32)
    onehot[group] = 1
    return collections.OrderedDict(update=[np.asarray(vec, np.float32)], group=onehot,
                                   seed=np.array([0, seed], np.int32), slot=np.int32(slot))


def test_factory_projects_the_lowest_group_onto_the_public_subspace():
    d = 6
    u = np.array([1, 2, 0, 0, 1, 0], np.float32) / np.sqrt(6)
    w = np.array([0, 0, 1, 0, 0, 0], np.float32)        # orthogonal to u
    vt = tff.StructType([("update", tff.StructWithPythonType([tff.TensorType(np.float32, [d])], list)),
                         ("group", tff.TensorType(np.float32, [3])),
                         ("seed", tff.TensorType(np.int32, [2])), ("slot", tff.TensorType(np.int32))])
    factory = PFAFactory([100.0] * 3, [0.0] * 3, [1, 1, 3], weights=[1.0, 1.0, 1.0])
    proc = factory.create(vt)
    private = 2 * u + 3 * w                               # group 0: projected -> 2u
    middle = w                                            # group 1: kept
    public = [c * u + 0.5 for c in (1.0, -2.0, 4.0)]      # group 2: rows spanning u after centring
    clients = [_client(private, 0, -1, 1), _client(middle, 1, -1, 2)] + \
              [_client(p, 2, j, 3 + j) for j, p in enumerate(public)]
    out = proc.next(proc.initialize(), clients).result[0]
    expected = 2 * u + w + np.mean(public, axis=0)
    assert np.allclose(out, expected, atol=1e-5)


@pytest.mark.parametrize("public_noise,variance", [
    # four public clients, each with N(0, 1): their sum has variance 4, divided by r = 4
    ("full", 4 / 16),
    # the diagnostic reading: each adds its share N(0, 1/4), the sum carries N(0, 1)
    ("share", 1 / 16)])
def test_public_clients_noise(public_noise, variance):
    d = 20000
    vt = tff.StructType([("update", tff.StructWithPythonType([tff.TensorType(np.float32, [d])], list)),
                         ("group", tff.TensorType(np.float32, [3])),
                         ("seed", tff.TensorType(np.int32, [2])), ("slot", tff.TensorType(np.int32))])
    proc = PFAFactory([1.0] * 3, [0.0, 0.0, 1.0], [1, 1, 4], weights=[0.0, 0.0, 1.0],
                      public_noise=public_noise).create(vt)
    clients = [_client(np.zeros(d), 2, j, 10 + j) for j in range(4)]
    noise = proc.next(proc.initialize(), clients).result[0]
    assert noise.var() == pytest.approx(variance, rel=0.05)


def test_rejects_same_public_and_projected_group():
    with pytest.raises(ValueError):
        PFAFactory([1.0] * 3, [1.0] * 3, [1, 1, 1], public_group=0, projected_group=0)
