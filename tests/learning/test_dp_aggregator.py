"""tff_idp.learning.dp_aggregator in stock tff.learning (issue 57, item 2): accepted by
build_unweighted_fed_avg and (as_weighted_aggregator) build_weighted_fed_avg on a Keras
model with OrderedDict(x=, y=) batches. With a client learning rate of 0 a round's model
change is the aggregator's noise alone: its std is noise_multiplier x clip /
clients_per_round (within 5%) and two rounds' noises are uncorrelated (|corr| < 0.05),
though the same client data is passed every round."""
import collections

import numpy as np
import pytest
import tensorflow as tf

from tff_idp.runtime import import_tff

tff = import_tff()
from tff_idp import learning  # noqa: E402
from tff_idp.queries import AdaptiveClipping  # noqa: E402

D_IN, D_OUT, CLIENTS = 100, 100, 3            # 10,100 coordinates: std to 0.7%, corr to 0.01


def _data():
    rng = np.random.default_rng(0)
    return [tf.data.Dataset.from_tensor_slices(collections.OrderedDict(
        x=rng.normal(size=(8, D_IN)).astype(np.float32),
        y=rng.integers(0, D_OUT, 8).astype(np.int32))).batch(4) for _ in range(CLIENTS)]


def _model_fn():
    keras = tf.keras.Sequential([tf.keras.Input((D_IN,)), tf.keras.layers.Dense(D_OUT)])
    return tff.learning.models.from_keras_model(
        keras, loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        input_spec=_data()[0].element_spec)


def _changes(aggregator, weighted=False, rounds=3):
    build = (tff.learning.algorithms.build_weighted_fed_avg if weighted
             else tff.learning.algorithms.build_unweighted_fed_avg)
    process = build(_model_fn, client_optimizer_fn=tff.learning.optimizers.build_sgdm(0.0),
                    server_optimizer_fn=tff.learning.optimizers.build_sgdm(1.0),
                    model_aggregator=aggregator)
    state = process.initialize()
    data = _data()
    flat = lambda s: np.concatenate([np.ravel(w) for w in
                                     process.get_model_weights(s).trainable])
    changes, before = [], flat(state)
    for _ in range(rounds):
        out = process.next(state, data)           # the same client data every round
        state = out.state
        now = flat(state)
        changes.append(now - before)
        before = now
    return changes, out.metrics


@pytest.mark.parametrize("noise_draw,weighted", [("client", False), ("client", True),
                                                 ("server", False)])
def test_the_noise_is_calibrated_and_fresh_every_round(noise_draw, weighted):
    z, clip = 2.0, 0.5
    agg = learning.dp_aggregator(z, CLIENTS, clip=clip, noise_draw=noise_draw)
    if weighted:                  # TFF's wrapper: the weights stay unused at the clients
        agg = tff.aggregators.as_weighted_aggregator(agg)
    changes, metrics = _changes(agg, weighted)
    for c in changes:
        assert np.std(c) == pytest.approx(z * clip / CLIENTS, rel=0.05)
    assert abs(np.corrcoef(changes[0], changes[1])[0, 1]) < 0.05
    assert abs(np.corrcoef(changes[1], changes[2])[0, 1]) < 0.05
    measured = metrics["aggregator"]
    assert "clipped_fraction" not in measured and "mean_update_norm" not in measured


def test_a_secure_sum_inner_aggregation_keeps_the_noise_calibrated():
    """``record_aggregation_factory=SecureSumFactory``: TFF's secure sum runs in its test
    context only (the default C++ context refuses the intrinsic), as TFF's own DP factory's."""
    z, clip = 2.0, 0.5
    secure = tff.aggregators.SecureSumFactory(upper_bound_threshold=8.0,
                                              lower_bound_threshold=-8.0)
    agg = learning.dp_aggregator(z, CLIENTS, clip=clip, record_aggregation_factory=secure)
    context = tff.backends.test.create_sync_test_cpp_execution_context()
    with tff.framework.get_context_stack().install(context):
        changes, metrics = _changes(agg)
    for c in changes:
        assert np.std(c) == pytest.approx(z * clip / CLIENTS, rel=0.05)
    assert abs(np.corrcoef(changes[0], changes[1])[0, 1]) < 0.05
    assert abs(np.corrcoef(changes[1], changes[2])[0, 1]) < 0.05
    record = metrics["aggregator"]["record"]
    assert int(record["secure_upper_clipped_count"]) == 0     # no noised value was clipped
    assert float(metrics["aggregator"]["query"]["noise_stddevs"][0]) == \
        pytest.approx(z * clip)


def test_the_state_yields_the_rounds_dp_event():
    import dp_accounting
    agg = learning.dp_aggregator(2.0, CLIENTS, clip=0.5)
    process = agg.create(tff.types.tensorflow_to_type(tf.TensorSpec([3], tf.float32)))
    state = process.initialize()
    with pytest.raises(learning.ExtractingDpEventFromInitialStateError):
        learning.dp_event_from_state(state)
    state = process.next(state, [np.ones(3, np.float32)] * CLIENTS).state
    assert learning.dp_event_from_state(state) == dp_accounting.GaussianDpEvent(2.0)
    adaptive = learning.dp_aggregator(1.0, CLIENTS, adaptive_clipping=AdaptiveClipping(
        value_noise_multiplier=1.2, count_stddev=0.8)).create(
        tff.types.tensorflow_to_type(tf.TensorSpec([3], tf.float32)))
    state = adaptive.next(adaptive.initialize(), [np.ones(3, np.float32)] * CLIENTS).state
    event = learning.dp_event_from_state(state)
    assert event == dp_accounting.ComposedDpEvent([
        dp_accounting.GaussianDpEvent(pytest.approx(1.2)),
        dp_accounting.GaussianDpEvent(pytest.approx(1.6))])


def test_top_k_keeps_the_fraction_asked_for():
    changes, metrics = _changes(learning.dp_aggregator(1.0, CLIENTS, keep_fraction=0.5),
                                rounds=1)
    assert np.mean(changes[0] != 0) == pytest.approx(0.5, abs=0.01)
    assert float(metrics["aggregator"]["kept_fraction_per_group"][0]) == pytest.approx(
        0.5, abs=0.01)


def test_adaptive_clipping_moves_the_clip():
    agg = learning.dp_aggregator(1.0, CLIENTS, clip=0.1, adaptive_clipping=AdaptiveClipping(
        value_noise_multiplier=1.0, count_stddev=0.05 * CLIENTS, target_quantile=0.5,
        learning_rate=0.2))
    _, metrics = _changes(agg, rounds=2)
    # zero updates are never clipped: the clip shrinks towards the median norm (0)
    assert float(metrics["aggregator"]["clip"]) < 0.1


@pytest.mark.parametrize("kwargs,error,needle", [
    (dict(noise_multiplier="1"), TypeError, "noise_multiplier='1': must be a finite number"),
    (dict(clip=-1.0), ValueError, "clip=-1.0"),
    (dict(keep_fraction=0.0), ValueError, "keep_fraction=0.0: must be in (0, 1]"),
    (dict(noise_draw="group"), ValueError, "noise_draw='group': must be 'client' or 'server'"),
    (dict(adaptive_clipping=0.5), TypeError, "adaptive_clipping=0.5"),
    # issue 76: the Python API refuses what the CLI refuses
    (dict(noise_multiplier=1e300), ValueError, "noise_multiplier=1e+300: must be in [0, 1e+06]"),
    (dict(clip=1e300), ValueError, "clip=1e+300: must be in [1e-08, 1e+08]"),
])
def test_bad_arguments_are_one_line_naming_them(kwargs, error, needle):
    args = dict(noise_multiplier=1.0, clients_per_round=3)
    args.update(kwargs)
    with pytest.raises(error) as e:
        learning.dp_aggregator(**args)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_dp_event_is_the_accountants_input():
    from tff_idp.privacy.accounting import make_accountant
    acc = make_accountant("rdp")
    acc.compose(learning.dp_event(2.0, 0.1, 10))
    assert 0 < acc.get_epsilon(1e-5) < 5


def test_two_fresh_server_draw_processes_give_uncorrelated_noise():
    """Issue 75, item 1: with the default arguments the server draws from a secret seed, so
    two processes (two deployments, or an observer's copy of the code) do not share noise in
    the same round; a fixed ``noise_seed`` (simulation only) makes it reproducible."""
    a, _ = _changes(learning.dp_aggregator(2.0, CLIENTS, clip=0.5, noise_draw="server"),
                    rounds=1)
    b, _ = _changes(learning.dp_aggregator(2.0, CLIENTS, clip=0.5, noise_draw="server"),
                    rounds=1)
    assert a[0].size >= 10_000
    assert abs(np.corrcoef(a[0], b[0])[0, 1]) < 0.1
    fixed = [_changes(learning.dp_aggregator(2.0, CLIENTS, clip=0.5, noise_draw="server",
                                             noise_seed=7), rounds=1)[0][0]
             for _ in range(2)]
    # the same noise (the changes differ in the last bit: each process initialises its
    # own random model, and a change is new weights minus old)
    np.testing.assert_allclose(fixed[0], fixed[1], atol=1e-6)


def _empty_round(noise_seed=None, noise_draw="client"):
    """An aggregation round with no client: the server's draw on the zero sum, over the
    expected cohort (GroupGaussianQuery's empty-round noise)."""
    agg = learning.dp_aggregator(2.0, CLIENTS, clip=0.5, noise_draw=noise_draw,
                                 noise_seed=noise_seed)
    process = agg.create(tff.types.tensorflow_to_type(tf.TensorSpec([10_000], tf.float32)))
    return np.asarray(process.next(process.initialize(), []).result)


def _public_draw(seed):
    """What an observer computes from (noise_seed, round) with the library's own code."""
    from tff_idp import dpmath
    noise = dpmath.gaussian_noise_like([tf.zeros([10_000])], 1.0,
                                       tf.constant([seed, 0], tf.int32))[0]
    return noise.numpy() * 2.0 * 0.5 / CLIENTS


@pytest.mark.parametrize("noise_draw", ["client", "server"])
def test_an_empty_rounds_noise_cannot_be_computed_from_public_values(noise_draw):
    """The empty round is noised (docs/privacy.md), and its noise is not the public function
    of (seed, round) an observer could recompute: with a fixed seed it is exactly that (the
    observer's computation is the right one), by default it is not, and two processes'
    empty rounds are uncorrelated."""
    fixed = _empty_round(noise_seed=0, noise_draw=noise_draw)
    np.testing.assert_allclose(fixed, _public_draw(0), rtol=1e-5, atol=1e-7)
    secret, other = _empty_round(noise_draw=noise_draw), _empty_round(noise_draw=noise_draw)
    assert np.std(secret) == pytest.approx(2.0 * 0.5 / CLIENTS, rel=0.05)
    for seed in (0, 1, 42):
        assert abs(np.corrcoef(secret, _public_draw(seed))[0, 1]) < 0.1
    assert abs(np.corrcoef(secret, other)[0, 1]) < 0.1


def test_noise_seed_is_checked_in_one_line():
    for value, needle in (("x", "noise_seed='x': must be None"),
                          (2**40, "noise_seed=1099511627776: must fit in int32"),
                          (True, "noise_seed=True")):
        with pytest.raises((TypeError, ValueError)) as e:
            learning.dp_aggregator(1.0, CLIENTS, noise_seed=value)
        assert needle in str(e.value) and "\n" not in str(e.value)



@pytest.mark.parametrize("kwargs,needle", [
    (dict(noise_multiplier=-1.0), "noise_multiplier=-1.0: must be in [1e-06, 1e+06]"),
    (dict(noise_multiplier=float("nan")), "noise_multiplier=nan: must be a finite number"),
    (dict(sampling_rate=2.0), "sampling_rate=2.0: must be in (0, 1]"),
    (dict(rounds=-1), "rounds=-1: must be an integer in [1, 1,000,000]"),
    (dict(rounds=2.5), "rounds=2.5: must be an integer"),
])
def test_dp_event_refuses_what_the_cli_refuses_in_one_line(kwargs, needle):
    """Issue 76: a negative or NaN multiplier composed into the accountant grew memory
    without bound; a rate of 2 or -1 rounds failed deep in dp_accounting."""
    args = dict(noise_multiplier=1.0, sampling_rate=0.1, rounds=10)
    args.update(kwargs)
    with pytest.raises((TypeError, ValueError)) as e:
        learning.dp_event(**args)
    assert needle in str(e.value) and "\n" not in str(e.value)
