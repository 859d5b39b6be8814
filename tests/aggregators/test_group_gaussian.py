"""GroupGaussianFactory: exact clip/top-k/reweighting on known inputs, noise statistics."""
import collections

import numpy as np
import pytest

from tff_idp.runtime import import_tff

tff = import_tff()
from tff_idp import dpmath  # noqa: E402
from tff_idp.aggregators import GroupGaussianFactory  # noqa: E402


def _value_type(shapes, m):
    update = tff.StructType([(k, tff.TensorType(np.float32, s)) for k, s in shapes.items()])
    return tff.StructType([("update", update), ("group", tff.TensorType(np.float32, [m])),
                           ("seed", tff.TensorType(np.int32, [2]))])


def _client(update, group, m, seed):
    onehot = np.zeros(m, np.float32)
    onehot[group] = 1
    return collections.OrderedDict(update=collections.OrderedDict(
        (k, np.asarray(v, np.float32)) for k, v in update.items()), group=onehot,
        seed=np.array(seed, np.int32))


def test_clip_topk_and_reweighting_exact():
    vt = _value_type({"a": [3], "b": [2, 2]}, 2)
    proc = GroupGaussianFactory([1.0, 10.0], [0.0, 0.0], [2, 1], weights=[0.5, 0.5],
                                keep_fractions=[1.0, 0.5]).create(vt)
    clients = [_client({"a": [3, 4, 0], "b": np.ones((2, 2))}, 0, 2, [0, 1]),
               _client({"a": [0, 0, 1], "b": 2 * np.ones((2, 2))}, 0, 2, [0, 2]),
               _client({"a": [1, 2, 3], "b": 3 * np.ones((2, 2))}, 1, 2, [0, 3])]
    out = proc.next(proc.initialize(), clients)
    # group 0: both clipped to norm 1, summed, / r_0 = 2, * 0.5
    c0 = np.concatenate([[3, 4, 0], np.ones(4)]) / np.sqrt(29)
    c1 = np.concatenate([[0, 0, 1], 2 * np.ones(4)]) / np.sqrt(17)
    g0 = 0.5 * (c0 + c1) / 2
    # group 1: norm sqrt(50) < 10, not clipped; top-4 of 7 by |x| keeps the 3s; / 1, * 0.5
    kept = np.array([0, 0, 3, 3, 3, 3, 3], np.float32)
    flat = np.concatenate([out.result["a"], out.result["b"].ravel()])
    expected_g1_kept = 4
    g1 = flat - g0
    assert np.count_nonzero(np.abs(g1) > 1e-6) == expected_g1_kept
    assert np.allclose(g1[np.abs(g1) > 1e-6], 1.5, atol=1e-6)
    assert set(np.flatnonzero(np.abs(g1) > 1e-6)) <= set(np.flatnonzero(kept))
    meas = out.measurements
    assert meas["cohort_per_group"].tolist() == [2, 1]
    assert meas["kept_fraction_per_group"] == pytest.approx([1.0, 4 / 7])
    # the clients' un-noised clipping and norms are not sent unless a simulation asks
    assert "clipped_fraction" not in meas and "mean_update_norm" not in meas
    factory = GroupGaussianFactory([1.0, 10.0], [0.0, 0.0], [2, 1], weights=[0.5, 0.5],
                                   keep_fractions=[1.0, 0.5], client_diagnostics=True)
    proc = factory.create(vt)
    meas = proc.next(proc.initialize(), clients).measurements
    assert meas["clipped_fraction"] == pytest.approx(2 / 3)
    assert meas["mean_update_norm"] == pytest.approx((np.sqrt(29) + np.sqrt(17) +
                                                      np.sqrt(50)) / 3, rel=1e-6)


def _from_clients(type_signature):
    """The federated_sum / federated_mean calls of a computation's building blocks whose
    argument is placed at CLIENTS: what leaves the clients, by the type summed."""
    from tensorflow_federated.python.core.impl.compiler import building_blocks
    found = []

    def visit(comp):
        if isinstance(comp, building_blocks.Call) and isinstance(
                comp.function, building_blocks.Intrinsic) and comp.function.uri in (
                "federated_sum", "federated_mean", "federated_weighted_mean",
                "federated_secure_sum_bitwidth"):
            found.append(comp.argument.type_signature)
        for child in comp.children():
            visit(child)
    visit(type_signature)
    return found


def test_topk_mask_keeps_exactly_the_largest():
    rng = np.random.default_rng(0)
    x = [rng.normal(size=(50, 20)).astype(np.float32), rng.normal(size=37).astype(np.float32)]
    kept, k, d = dpmath.top_k_mask(x, 0.3)
    flat = np.concatenate([t.ravel() for t in x])
    kept_flat = np.concatenate([t.numpy().ravel() for t in kept])
    assert int(d) == flat.size and int(k) == round(0.3 * flat.size)
    nz = np.flatnonzero(kept_flat)
    assert len(nz) == int(k)
    assert np.array_equal(kept_flat[nz], flat[nz])
    assert np.min(np.abs(flat[nz])) >= np.max(np.abs(np.delete(flat, nz)))


@pytest.mark.parametrize("draw", ["client", "group"])
@pytest.mark.parametrize("weights,expected_var", [
    ((0.5, 0.5), 0.25 * 4.0 / 16 + 0.25 * 0.25 / 4),
    ((1.0, 0.0), 4.0 / 16),
])
def test_noise_statistics(weights, expected_var, draw):
    """Zero updates: the result is pure noise, N(0, sum_m (w_m s_m / r_m)^2) per coordinate,
    since group m's sum carries N(0, s_m^2) whatever its cohort size, whether the clients
    draw their shares or the server draws the group's noise."""
    d = 40000
    vt = _value_type({"w": [d]}, 2)
    proc = GroupGaussianFactory([1.0, 1.0], [2.0, 0.5], [4, 2], weights=list(weights),
                                noise_draw=draw, noise_seed=5).create(vt)
    clients = [_client({"w": np.zeros(d)}, 0, 2, [1, i]) for i in range(4)] + \
              [_client({"w": np.zeros(d)}, 1, 2, [1, 10 + i]) for i in range(2)]
    noise = proc.next(proc.initialize(), clients).result["w"]
    assert abs(noise.mean()) < 4 * np.sqrt(expected_var / d)
    assert noise.var() == pytest.approx(expected_var, rel=0.05)
    again = proc.next(proc.initialize(), clients).result["w"]
    assert np.array_equal(noise, again)       # seeded: reproducible


@pytest.mark.parametrize("draw", ["client", "group"])
def test_group_noise_does_not_depend_on_realised_cohort(draw):
    d = 40000
    vt = _value_type({"w": [d]}, 1)
    proc = GroupGaussianFactory([1.0], [1.0], [5], weights=[1.0], noise_draw=draw).create(vt)
    for k in (2, 9):
        clients = [_client({"w": np.zeros(d)}, 0, 1, [3, i]) for i in range(k)]
        noise = proc.next(proc.initialize(), clients).result["w"]
        assert noise.var() == pytest.approx(1.0 / 25, rel=0.05)   # (s / r)^2, r = 5


def test_rejects_bad_arguments():
    with pytest.raises(ValueError):
        GroupGaussianFactory([1.0], [-1.0], [5])
    with pytest.raises(ValueError):
        GroupGaussianFactory([1.0, 1.0], [1.0], [5, 5])
    with pytest.raises(ValueError):
        GroupGaussianFactory([1.0], [1.0], [5], keep_fractions=[1.5])
    with pytest.raises(TypeError):
        GroupGaussianFactory([1.0], [1.0], [5]).create(tff.TensorType(np.float32, [3]))


def test_group_draws_are_fresh_every_round_and_clients_add_none():
    """noise_draw="group": the round count in the state moves the seed (new noise each round,
    the same noise for the same round); the clients' values reach the sum unnoised."""
    d = 1000
    vt = _value_type({"w": [d]}, 1)
    proc = GroupGaussianFactory([100.0], [1.0], [2], weights=[1.0], noise_draw="group",
                                noise_seed=9).create(vt)
    clients = [_client({"w": np.full(d, 3.0)}, 0, 1, [0, i]) for i in range(2)]
    state = proc.initialize()
    first = proc.next(state, clients)
    second = proc.next(first.state, clients)
    assert float(first.state["round"]) == 1.0 and float(second.state["round"]) == 2.0
    assert np.array_equal(proc.next(state, clients).result["w"], first.result["w"])
    n1, n2 = first.result["w"] - 3.0, second.result["w"] - 3.0     # (3 + 3 + noise) / 2
    assert not np.allclose(n1, n2)
    assert np.var(n1) == pytest.approx(0.25, rel=0.2)
    assert abs(np.corrcoef(n1, n2)[0, 1]) < 0.15


def test_rejects_unknown_noise_draw():
    with pytest.raises(ValueError, match="noise_draw='server'"):
        GroupGaussianFactory([1.0], [1.0], [5], noise_draw="server")


def test_batched_clip_and_noise_are_each_clients_own():
    """dpmath's client-axis functions give client k what the one-client call gives it:
    the clip of its own norm, the noise of its own seed."""
    import tensorflow as tf
    rng = np.random.default_rng(1)
    x = [rng.normal(size=(5, 4, 3)).astype(np.float32), rng.normal(size=(5, 7)).astype(np.float32)]
    clips = np.array([0.5, 1.0, np.inf, 100.0, 2.0], np.float32)
    seeds = np.array([[3, k] for k in range(5)], np.int32)
    out, norms, was = dpmath.clip_by_l2(x, tf.constant(clips))
    noise = dpmath.gaussian_noise_per_client(x, tf.constant(clips[[0, 1, 4, 0, 1]]), seeds)
    for k in range(5):
        norm = np.sqrt(sum(np.sum(t[k] ** 2) for t in x))
        assert float(norms[k]) == pytest.approx(norm, rel=1e-6)
        scale = 1.0 if clips[k] == np.inf else min(1.0, clips[k] / norm)
        assert float(was[k]) == float(norm > clips[k])
        for t, o in zip(x, out):
            np.testing.assert_allclose(o[k].numpy(), t[k] * scale, rtol=1e-6)
        alone = dpmath.gaussian_noise_like([t[k] for t in x], clips[[0, 1, 4, 0, 1]][k], seeds[k])
        for a, b in zip(alone, noise):
            np.testing.assert_array_equal(a.numpy(), b[k].numpy())
