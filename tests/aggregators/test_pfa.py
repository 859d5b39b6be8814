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


def test_public_rows_placed_once_equal_the_clients_summed_extras():
    """The fast backend gathers each chunk's public rows (``client_rows``) and places them
    once a round (``extra_from_rows``); TFF sums every client's own [S, d] matrix
    (``client_extra``). Both are the [S, d] matrix with public client j's flat update in
    row slots[j], bit for bit: no row for a private client or a slot beyond S."""
    import tensorflow as tf
    from tff_idp.queries.pfa import PFAQuery
    query = PFAQuery([1.0] * 3, [0.0] * 3, [2, 2, 3])
    s = query.rows
    rng = np.random.default_rng(3)
    updates = [rng.normal(size=(7, 4, 3)).astype(np.float32),
               rng.normal(size=(7, 5)).astype(np.float32)]
    groups = np.eye(3, dtype=np.float32)[[0, 2, 1, 2, 2, 2, 0]]
    slots = np.array([-1, 3, -1, 0, s, s - 1, -1], np.int32)
    chunks = [slice(0, 4), slice(4, 7)]
    parts = [query.client_rows(tf.constant(groups[c]), tf.constant(slots[c]),
                               [tf.constant(u[c]) for u in updates]) for c in chunks]
    placed = query.extra_from_rows(*(tf.concat(t, 0) for t in zip(*parts))).numpy()
    summed = sum(query.client_extra(tf.constant(groups[k:k + 1]), None, tf.constant(slots[k:k + 1]),
                                    [tf.constant(u[k:k + 1]) for u in updates]).numpy()
                 for k in range(7))
    want = np.zeros((s, 17), np.float32)
    for k in (1, 3, 5):                      # public, with a row; client 4's slot is S
        want[slots[k]] = np.concatenate([u[k].ravel() for u in updates])
    np.testing.assert_array_equal(placed, want)
    np.testing.assert_array_equal(summed, want)
    assert [p[0].numpy().tolist() for p in parts] == [[3, 0], [s - 1]]
    none = query.no_client_rows([tf.zeros([4, 3]), tf.zeros([5])])
    assert none[0].shape == (0,) and none[1].shape == (0, 17)
