"""Our adaptive clipping (Andrew et al. 2021) against TFF's gaussian_adaptive factory, and
its privacy split against TFF's own formula."""
import collections

import numpy as np
import pytest
import tensorflow as tf

from tff_idp.aggregators.group_gaussian import GroupGaussianFactory
from tff_idp.queries import AdaptiveClipping, GroupGaussianQuery
from tff_idp.privacy import idp
from tff_idp.runtime import import_tff


def test_count_noise_keeps_tffs_default_when_it_is_valid():
    assert idp.clipped_count_stddev(1.77, 30) == pytest.approx(1.5)     # paper 004's cohort
    assert idp.clipped_count_stddev(1.77, 6) == 1.77                     # TFF would refuse 0.3


@pytest.mark.parametrize("z,cohort", [(1.77, 30.0), (0.8, 12.0), (2.5, 100.0)])
def test_value_noise_split_matches_tff(z, cohort):
    from tensorflow_federated.python.aggregators.differential_privacy import (
        adaptive_clip_noise_params)
    count_std = idp.clipped_count_stddev(z, cohort)
    tff_value, tff_count = adaptive_clip_noise_params(z, cohort, count_std)
    assert tff_count == pytest.approx(count_std)
    assert idp.value_noise_multiplier(z, count_std) == pytest.approx(tff_value, rel=1e-9)
    with pytest.raises(ValueError, match="must exceed half"):
        idp.value_noise_multiplier(z, z / 2)


def test_noise_free_clip_trajectory_and_aggregate_match_tffs_factory():
    """Same client updates for 4 rounds, no noise: our clip sequence and mean update equal
    TFF's DifferentiallyPrivateFactory.gaussian_adaptive (float32 tolerance)."""
    tff = import_tff()
    rng = np.random.default_rng(0)
    k, d = 6, 5
    ours = GroupGaussianFactory([0.1], [0.0], [float(k)], [1.0],
                                adaptive=AdaptiveClipping(0.0, 0.0, 0.5, 0.2))
    value_type = tff.StructType([("update", tff.TensorType(np.float32, [d])),
                                 ("group", tff.TensorType(np.float32, [1])),
                                 ("seed", tff.TensorType(np.int32, [2]))])
    p_ours = ours.create(value_type)
    theirs = tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive(
        noise_multiplier=0.0, clients_per_round=float(k), initial_l2_norm_clip=0.1,
        target_unclipped_quantile=0.5, learning_rate=0.2, clipped_count_stddev=0.0)
    p_theirs = theirs.create(tff.TensorType(np.float32, [d]))
    s_ours, s_theirs = p_ours.initialize(), p_theirs.initialize()
    for rnd in range(4):
        updates = [(rng.normal(size=d) * rng.uniform(0.02, 0.4)).astype(np.float32)
                   for _ in range(k)]
        values = [collections.OrderedDict(update=u, group=np.ones(1, np.float32),
                                          seed=np.array([rnd, i], np.int32))
                  for i, u in enumerate(updates)]
        out_o = p_ours.next(s_ours, values)
        out_t = p_theirs.next(s_theirs, updates)
        np.testing.assert_allclose(np.asarray(out_o.result), np.asarray(out_t.result),
                                   rtol=1e-5, atol=1e-7)
        s_ours, s_theirs = out_o.state, out_t.state
        their_clip = float(out_t.measurements["dp_query_metrics"]["clip"]) if \
            "dp_query_metrics" in out_t.measurements else None
        assert float(out_o.measurements["clip"]) > 0
        if their_clip is not None:
            assert float(out_o.measurements["clip"]) == pytest.approx(their_clip, rel=1e-5)
    assert float(s_ours["clips"][0]) != pytest.approx(0.1)          # it did adapt


def test_adaptive_bit_noise_has_the_calibrated_std():
    f = GroupGaussianQuery([1.0], [0.0], [10.0], [1.0],
                           adaptive=AdaptiveClipping(0.0, 2.0, 0.5, 0.2))
    state = f.initial_state_tensors()
    counts = tf.constant([10.0])
    n = 4000
    seeds = tf.stack([tf.fill([n], 7), tf.range(n)], axis=1)
    bits = f.client_math([tf.zeros([n, 3])], tf.ones([n, 1]), seeds, state,
                         counts)[3].numpy() + 0.5 - 1.0
    # each client carries N(0, 2^2 / 10): the sum over a cohort of 10 carries N(0, 2^2)
    assert np.std(bits) * np.sqrt(10) == pytest.approx(2.0, rel=0.05)
