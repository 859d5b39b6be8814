"""PFA: principal directions without a d x d matrix, and the projection inside the factory."""
import collections

import numpy as np
import pytest

from tff_idp.runtime import import_tff

tff = import_tff()
from tff_idp.aggregators import PFAFactory, PFAProjection, principal_directions  # noqa: E402


def test_principal_direction_of_a_known_subspace():
    rng = np.random.default_rng(0)
    d = 500
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    rows = np.outer(rng.normal(size=12) * 5, u) + 0.01 * rng.normal(size=(12, d)) + 3.0
    rows = np.vstack([rows, np.zeros((4, d))]).astype(np.float32)   # 4 unused rows
    v, mean = principal_directions(rows, 12, 1)
    assert abs(abs(v.numpy()[:, 0] @ u) - 1) < 1e-3
    np.testing.assert_allclose(mean.numpy(), rows[:12].mean(0), atol=1e-5)
    two = principal_directions(rows, 12, 2)[0].numpy()
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
    mu = np.mean(public, axis=0)
    projected = u * (u @ (private - mu)) + mu          # around the public mean (original)
    expected = projected + w + mu
    assert np.allclose(out, expected, atol=1e-5)


def _value_type(sizes):
    return tff.StructType([
        ("update", tff.StructWithPythonType([tff.TensorType(np.float32, [n]) for n in sizes],
                                            list)),
        ("group", tff.TensorType(np.float32, [3])), ("seed", tff.TensorType(np.int32, [2])),
        ("slot", tff.TensorType(np.int32))])


def _clients(updates, group, first_seed):
    out = []
    for j, parts in enumerate(updates):
        onehot = np.zeros(3, np.float32)
        onehot[group] = 1
        out.append(collections.OrderedDict(
            update=[np.asarray(p, np.float32) for p in parts], group=onehot,
            seed=np.array([0, first_seed + j], np.int32),
            slot=np.int32(j if group == 2 else -1)))
    return out


@pytest.mark.parametrize("projection", ["per-layer", "global"])
def test_a_shared_update_survives_the_projection(projection):
    """Issue 32 item 1: every client sends the same g plus small noise; the projected private
    mean is g to within the noise (projecting onto the centred directions alone, as before,
    gave about 0: centring removes the shared direction)."""
    rng = np.random.default_rng(1)
    sizes = (300, 40)
    g = [rng.normal(size=n) for n in sizes]
    noisy = lambda k: [[x + 0.01 * rng.normal(size=x.shape) for x in g] for _ in range(k)]
    factory = PFAFactory([1e6] * 3, [0.0] * 3, [6, 1, 8], weights=[1.0, 0.0, 0.0],
                         pfa=PFAProjection(projection=projection))
    proc = factory.create(_value_type(sizes))
    clients = _clients(noisy(6), 0, 0) + _clients(noisy(8), 2, 100)
    out = proc.next(proc.initialize(), clients).result
    for got, want in zip(out, g):
        assert np.abs(got - want).max() < 0.05
        assert np.linalg.norm(got - want) < 0.05 * np.linalg.norm(want)


def test_per_layer_keeps_a_direction_per_tensor_and_global_keeps_one():
    """The public rows vary along a in tensor A and along b in tensor B independently; a
    private mean mu + a + b is recovered per layer (rank 1 each) but not by one global rank-1
    subspace, which keeps only the larger of the two directions."""
    rng = np.random.default_rng(2)
    a = np.zeros(50)
    a[3] = 1.0
    b = np.zeros(30)
    b[7] = 1.0
    mu = [rng.normal(size=50), rng.normal(size=30)]
    public = [[mu[0] + 3 * rng.normal() * a, mu[1] + 1 * rng.normal() * b] for _ in range(10)]
    target = [mu[0] + a, mu[1] + b]
    result = {}
    for projection in ("per-layer", "global"):
        factory = PFAFactory([1e6] * 3, [0.0] * 3, [1, 1, 10], weights=[1.0, 0.0, 0.0],
                             pfa=PFAProjection(projection=projection))
        proc = factory.create(_value_type((50, 30)))
        out = proc.next(proc.initialize(), _clients([target], 0, 0) +
                        _clients(public, 2, 100)).result
        result[projection] = out
    pub_mean = [np.mean([p[i] for p in public], 0) for i in range(2)]
    np.testing.assert_allclose(result["per-layer"][0], pub_mean[0] + a * (a @ (target[0] - pub_mean[0])), atol=1e-4)
    np.testing.assert_allclose(result["per-layer"][1], pub_mean[1] + b * (b @ (target[1] - pub_mean[1])), atol=1e-4)
    # the global subspace is (nearly) a's: B's private deviation along b is mostly dropped
    assert abs((result["global"][1] - pub_mean[1]) @ b) < 0.2
    assert abs((result["per-layer"][1] - pub_mean[1]) @ b) > 0.5


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
                      pfa=PFAProjection(public_noise=public_noise)).create(vt)
    clients = [_client(np.zeros(d), 2, j, 10 + j) for j in range(4)]
    noise = proc.next(proc.initialize(), clients).result[0]
    assert noise.var() == pytest.approx(variance, rel=0.05)


def test_rejects_same_public_and_projected_group():
    with pytest.raises(ValueError):
        PFAFactory([1.0] * 3, [1.0] * 3, [1, 1, 1],
                   pfa=PFAProjection(public_group=0, projected_group=0))
    with pytest.raises(ValueError, match="projection='rows'"):
        PFAFactory([1.0] * 3, [1.0] * 3, [1, 1, 1], pfa=PFAProjection(projection="rows"))
