"""tff_idp.learning.build_group_dp_fed_avg (issue 57, item 3; issue 78: both processes take
one client step): GDPFed+ with 3 privacy groups as a tff.learning LearningProcess matches the
suite's own TFF process (tff_idp.learning.process.build_group_dp_process, what the TFF
backend runs) on the same data, initial weights and server-drawn noise to 1e-5 over 3 rounds,
with TFF's SGD with and without momentum and the suite's Adam and momentum with weight
decay as TFF optimizers (``learning.client_optimizer``), GDPFed's learning rate decay set
through the process's hparams; the group rides in the data; bad groups and
bad arguments are one clear error."""
import collections

import numpy as np
import pytest
import tensorflow as tf

from tff_idp.runtime import import_tff

tff = import_tff()
from tff_idp import learning  # noqa: E402
from tff_idp.algorithms.client_work import LocalTraining  # noqa: E402
from tff_idp.learning.process import build_group_dp_process  # noqa: E402

D_IN, D_OUT, LR, DECAY = 6, 3, 0.1, 0.9
SPEC = collections.OrderedDict(x=tf.TensorSpec([None, D_IN], tf.float32),
                               y=tf.TensorSpec([None], tf.int32))


def _plan(method="gdpfed_plus", **settings):
    settings.setdefault("noise_draw", "group")      # reproducible: the server's seeded draw
    return learning.plan_from_budgets(method, [0.5, 1.5, 3.0], [20, 20, 20], rounds=3,
                                      expected_rate=0.2, clip=1.0, **settings)


def _keras():
    return tf.keras.Sequential([tf.keras.Input((D_IN,)), tf.keras.layers.Dense(D_OUT)])


def _model_fn():
    return tff.learning.models.from_keras_model(
        _keras(), loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        input_spec=SPEC)


def _arrays(client):
    rng = np.random.default_rng(client)
    return (rng.normal(size=(8, D_IN)).astype(np.float32),
            rng.integers(0, D_OUT, 8).astype(np.int32))


def _cohort(rnd):
    """Per round: (client id, privacy group) pairs, every group present."""
    return [(10 * rnd + g * 3 + i, g) for g in range(3) for i in range(1 + (g + rnd) % 2)]


# the library's TFF optimizer and the suite's client optimizer of the same steps: both take
# ClientTrainer.step. TFF's own Adam adds epsilon to the uncorrected sqrt(v) (Keras' "epsilon
# hat"): the suite's "adam_keras"; the suite's "adam" adds it to the bias-corrected one
# (Kingma & Ba Alg. 1; the two differ where a gradient is below about 1e-5, up to 8e-4 in these
# weights after 3 rounds) and goes in as a TFF optimizer (learning.client_optimizer), as
# do momentum with weight decay:
OPTIMIZERS = {
    "sgd": (lambda: tff.learning.optimizers.build_sgdm(LR), dict()),
    "momentum": (lambda: tff.learning.optimizers.build_sgdm(LR, momentum=0.5),
                 dict(momentum=0.5)),
    "suite-adam": (lambda: learning.client_optimizer("adam", LR), dict(optimizer="adam")),
    # TFF's own Adam is the suite's in Keras' form (paper 004's clients)
    "tff-adam": (lambda: tff.learning.optimizers.build_adam(LR), dict(optimizer="adam_keras")),
    "suite-momentum-decay": (lambda: learning.client_optimizer("sgd", LR, 0.9, 0.01),
                             dict(momentum=0.9, weight_decay=0.01)),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_matches_the_suites_tff_process_to_1e5(name):
    library_optimizer, suite_optimizer = OPTIMIZERS[name]
    plan = _plan()
    w0 = [w.numpy() for w in _keras().weights]
    process = learning.build_group_dp_fed_avg(_model_fn, library_optimizer(),
                                              plan=plan, noise_seed=7)
    state = process.set_model_weights(process.initialize(),
                                      tff.learning.models.ModelWeights(w0, []))
    suite = build_group_dp_process(_keras, w0, plan.aggregation_factory(7),
                                   (SPEC["x"], SPEC["y"]), num_groups=3,
                                   training=LocalTraining(local_lr=LR, lr_decay=DECAY,
                                                          local_steps=None, **suite_optimizer))
    suite_state = suite.initialize()
    for rnd in range(3):
        cohort = _cohort(rnd)
        hparams = process.get_hparams(state)
        hparams["client_work"]["learning_rate"] = np.float32(LR * DECAY ** rnd)
        state = process.set_hparams(state, hparams)
        ours = [learning.with_group(tf.data.Dataset.from_tensor_slices(
            collections.OrderedDict(zip("xy", _arrays(c)))).batch(4), g, plan)
            for c, g in cohort]
        out = process.next(state, ours)
        state = out.state
        theirs = [tf.data.Dataset.from_tensor_slices(_arrays(c)).batch(4) for c, _ in cohort]
        info = [collections.OrderedDict(group=np.eye(3, dtype=np.float32)[g],
                                        seed=np.array([c, rnd], np.int32), slot=np.int32(-1))
                for c, g in cohort]
        suite_state, _ = suite.next(suite_state, theirs, info)
        counts = out.metrics["aggregator"]["cohort_per_group"]
        assert list(counts) == [sum(g == m for _, g in cohort) for m in range(3)]
    got = process.get_model_weights(state).trainable
    for a, b in zip(got, suite_state["weights"]):
        np.testing.assert_allclose(a, b, atol=1e-5)
    assert np.max(np.abs(got[0] - w0[0])) > 1e-2          # it did train
    assert learning.dp_event_from_state(state.aggregator, 1).noise_multiplier == \
        pytest.approx(plan.noise_multipliers[1], rel=1e-6)


def test_client_noise_and_idp_methods_run_through_it():
    for method, settings in (("gdpfed", dict(noise_draw="client")),
                             ("idp_sample", {}), ("idp_scale", {}),
                             ("idp_fedavg", dict(adaptive_clipping="ours")),
                             # TFF's own DP factory gets the bare update (once read as
                             # the tag's dict method .update)
                             ("idp_fedavg", dict(adaptive_clipping="tff"))):
        plan = _plan(method, **settings)
        process = learning.build_group_dp_fed_avg(
            _model_fn, tff.learning.optimizers.build_sgdm(LR), plan=plan)
        data = [learning.with_group(tf.data.Dataset.from_tensor_slices(
            collections.OrderedDict(zip("xy", _arrays(g)))).batch(4), g, plan)
            for g in range(3)]
        out = process.next(process.initialize(), data)
        weights = process.get_model_weights(out.state).trainable
        assert all(np.all(np.isfinite(w)) for w in weights), method


def _with_raw_group(group):
    x, y = _arrays(0)
    return tf.data.Dataset.from_tensor_slices(collections.OrderedDict(
        x=x, y=y, group=np.full(8, group, np.int32))).batch(4)


@pytest.mark.parametrize("group", [3, -1])
def test_a_group_out_of_range_is_one_clear_error(group):
    plan = _plan()
    with pytest.raises(ValueError, match=rf"group={group}: must be a privacy group index in "
                       r"\[0, 3\)"):
        learning.with_group(tf.data.Dataset.from_tensor_slices(
            collections.OrderedDict(zip("xy", _arrays(0)))).batch(4), group, plan)
    process = learning.build_group_dp_fed_avg(_model_fn, tff.learning.optimizers.build_sgdm(LR),
                                              plan=plan)
    message = "out of range; the plan has 3 privacy groups" if group >= 0 else \
        "group: below 0, or a client dataset without elements"
    with pytest.raises(Exception, match=message):
        process.next(process.initialize(), [_with_raw_group(group)])


def test_a_missing_group_is_refused_by_the_process_type():
    process = learning.build_group_dp_fed_avg(_model_fn, tff.learning.optimizers.build_sgdm(LR),
                                              plan=_plan())
    bare = tf.data.Dataset.from_tensor_slices(
        collections.OrderedDict(zip("xy", _arrays(0)))).batch(4)
    with pytest.raises(TypeError, match="group=int32"):
        process.next(process.initialize(), [bare])


@pytest.mark.parametrize("kwargs,error,needle", [
    (dict(plan="gdpfed"), TypeError, "plan='gdpfed': must be a tff_idp.learning.GroupDPPlan"),
    (dict(client_optimizer_fn=0.1), TypeError, "client_optimizer_fn=0.1: must be a "
     "tff.learning.optimizers.Optimizer"),
    (dict(noise_seed=1.5), TypeError,
     "noise_seed=1.5: must be None (a secret seed, the default) or an integer"),
])
def test_bad_arguments_are_one_line_naming_them(kwargs, error, needle):
    args = dict(model_fn=_model_fn, client_optimizer_fn=tff.learning.optimizers.build_sgdm(LR),
                plan=_plan())
    args.update(kwargs)
    with pytest.raises(error) as e:
        learning.build_group_dp_fed_avg(**args)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_plans_refuse_what_the_process_cannot_run():
    from tff_idp.config import ConfigError
    with pytest.raises(ValueError, match="plan: pfa sends its public clients' rows by slot"):
        learning.build_group_dp_fed_avg(_model_fn, tff.learning.optimizers.build_sgdm(LR),
                                        plan=_plan("pfa", noise_draw="client"))
    with pytest.raises(ConfigError, match="method='fedrep': the library's process runs"):
        _plan("fedrep")
    with pytest.raises(ConfigError, match=r"group_sizes=\[20, 20\]: needs one entry per "
                       r"budget \(3\)"):
        learning.plan_from_budgets("gdpfed", [0.5, 1.5, 3.0], [20, 20], rounds=3,
                                   expected_rate=0.2)
    with pytest.raises(ConfigError, match="budget"):          # overspends: refused
        learning.plan_from_budgets("gdpfed", [0.5, 1.5, 3.0], [20, 20, 20], rounds=3,
                                   expected_rate=0.2, noise_multipliers=[0.1] * 3)
    with pytest.raises(ValueError, match=r"client_groups: group sizes \[2, 1, 0\] differ"):
        learning.sample_cohort(np.random.default_rng(0), [0, 0, 1], _plan())


def test_sample_cohort_samples_each_group_at_its_rate():
    plan = learning.plan_from_budgets("gdpfed_plus", [0.5, 1.5, 3.0], [400, 400, 400],
                                      rounds=3, expected_rate=0.2)
    groups = np.repeat([0, 1, 2], 400)
    rng = np.random.default_rng(0)
    counts = np.zeros(3)
    for _ in range(50):
        counts += np.bincount(groups[learning.sample_cohort(rng, groups, plan)], minlength=3)
    np.testing.assert_allclose(counts / (50 * 400), plan.rates, rtol=0.1)


@pytest.mark.parametrize("args,needle", [
    (("rmsprop",), "client_optimizer='rmsprop' is not one of ('sgd', 'adam', 'adam_keras')"),
    (("sgd", -0.1), "learning_rate=-0.1: must be in (0, 1000]"),
    (("sgd", 0.1, 1.0), "momentum=1.0: must be in [0, 1)"),
    (("adam", 0.1, 0.0, -1.0), "weight_decay=-1.0: must be in [0, 1000]"),
])
def test_the_suites_client_optimizer_refuses_bad_arguments_in_one_line(args, needle):
    with pytest.raises(ValueError) as e:
        learning.client_optimizer(*args)
    assert str(e.value) == needle
