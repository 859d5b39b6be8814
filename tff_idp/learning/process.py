"""GDPFed's family as a ``tff.learning`` ``LearningProcess``.

``build_group_dp_fed_avg(model_fn, client_optimizer_fn, server_optimizer_fn, plan=plan)``
composes, with ``tff.learning.templates.compose_learning_process``:

- TFF's broadcast distributor;
- a client work that trains the ``tff.learning`` model on the client's batches with the
  client optimizer (GDPFed Alg. 1 lines 7-10) and sends its model change Delta tagged with
  its aggregation group (one-hot) and a noise seed drawn from the operating system in the
  client (:func:`~tff_idp.dpmath.secret_seed`): nothing else leaves the client (no
  loss or metric: un-noised client statistics, ``tff_idp.privacy.threat_model``);
- the method's aggregation factory, the one the suite's own rounds use (clip, noise, group
  sums, Top_k, reweighting: lines 12-19; ``GroupDPPlan.aggregation_factory``), as TFF's
  weighted aggregator whose weights are dropped at the clients (DP averages clients
  uniformly);
- TFF's optimizer finalizer on the aggregate (theta + server_lr * aggregate with the default
  SGD(1.0): line 19). TFF's optimizers descend a gradient, so the finalizer hands them the
  aggregate's negative.

Each client's privacy group rides with its data: every element of its ``tf.data.Dataset`` has
a ``group`` field (int32, the privacy group's index in [0, plan.num_groups), the same in
every element) beside the model's own ``input_spec`` fields (``with_group`` adds it and checks
it). A client with no element, a group out of range, or two groups fails the round with
TensorFlow's assertion naming ``group`` (inside TFF's runtime error). The cohort is the
caller's: sample it as the plan assumes (``tff_idp.learning.sample_cohort``), or the plan's
epsilons do not hold.
"""
from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import Optional

import numpy as np
import tensorflow as tf

from ..runtime import import_tff
from .. import dpmath
from ..queries.group_gaussian import check_noise_seed
from .aggregator import restore_container
from .plan import GroupDPPlan

tff = import_tff()

GROUP = "group"                     # the element field naming a client's privacy group


def with_group(dataset: tf.data.Dataset, group: int, plan: GroupDPPlan) -> tf.data.Dataset:
    """``dataset`` (batches of the model's ``input_spec``, a mapping) with every element's
    ``group`` field set to ``group``, checked against ``plan``'s groups."""
    if isinstance(group, bool) or not isinstance(group, (int, np.integer)) or \
            not 0 <= group < plan.num_groups:
        raise ValueError(f"group={group!r}: must be a privacy group index in "
                         f"[0, {plan.num_groups})")
    if not isinstance(dataset.element_spec, Mapping):
        raise TypeError(f"dataset: elements must be mappings (OrderedDict(x=, y=)), got "
                        f"{dataset.element_spec}")

    def tag(batch):
        size = tf.shape(tf.nest.flatten(batch)[0])[0]
        return collections.OrderedDict(batch, **{GROUP: tf.fill([size], np.int32(group))})

    return dataset.map(tag)


def _optimizer(name: str, fn):
    """A ``tff.learning.optimizers.Optimizer`` from an optimizer or a no-argument function
    returning one (as ``build_unweighted_fed_avg`` takes them)."""
    opt_type = tff.learning.optimizers.Optimizer
    if isinstance(fn, opt_type):
        return fn
    if callable(fn):
        opt = fn()
        if isinstance(opt, opt_type):
            return opt
    raise TypeError(f"{name}={fn!r}: must be a tff.learning.optimizers.Optimizer or a "
                    "function returning one (e.g. tff.learning.optimizers.build_sgdm(0.1))")


def _check_model(model_fn):
    """The model's input_spec (a mapping without ``group``) and its weights type."""
    with tf.Graph().as_default():
        model = model_fn()
    if not isinstance(model, tff.learning.models.VariableModel):
        raise TypeError(f"model_fn={model_fn!r}: must return a tff.learning.models."
                        f"VariableModel (e.g. from_keras_model), got {type(model).__name__}")
    spec = model.input_spec
    if not isinstance(spec, Mapping) or GROUP in spec:
        raise TypeError(f"model_fn: input_spec must be a mapping without a {GROUP!r} field "
                        f"(OrderedDict(x=, y=)), got {spec}")
    data_spec = collections.OrderedDict(spec, **{GROUP: tf.TensorSpec([None], tf.int32)})
    return data_spec, tff.learning.models.weights_type_from_model(model)


def build_client_work(model_fn, optimizer, plan: GroupDPPlan, data_spec, weights_type):
    """The client work of the module docstring: local training (Alg. 1 lines 7-10), the
    model change tagged with its aggregation group and a fresh seed."""
    num_groups = plan.num_groups
    to_aggregation = np.asarray(plan.plan.aggregation_groups, np.int32)
    num_aggregation = plan.plan.num_aggregation_groups
    data_type = tff.SequenceType(tff.types.tensorflow_to_type(data_spec))
    initial_hparams = optimizer.get_hparams(
        optimizer.initialize(tf.TensorSpec([], tf.float32)))

    @tff.federated_computation
    def init_fn():
        return tff.federated_value(initial_hparams, tff.SERVER)

    hparams_type = init_fn.type_signature.result.member

    @tff.tensorflow.computation(hparams_type, weights_type, data_type)
    def client_update(hparams, initial, data):
        model = model_fn()
        weights = tff.learning.models.ModelWeights.from_model(model)

        @tf.function
        def train(hparams, initial, data):
            tf.nest.map_structure(lambda v, t: v.assign(t), weights, initial)
            trainable = tuple(tf.nest.flatten(weights.trainable))
            state = optimizer.set_hparams(optimizer.initialize(
                tuple(tf.TensorSpec(v.shape, v.dtype) for v in trainable)), hparams)

            def step(acc, batch):
                state, group, consistent = acc
                tags = batch[GROUP]
                group = tf.where(group < 0, tags[0], group)
                consistent = tf.logical_and(consistent, tf.reduce_all(tf.equal(tags, group)))
                inputs = collections.OrderedDict(
                    (k, v) for k, v in batch.items() if k != GROUP)
                with tf.GradientTape() as tape:
                    loss = model.forward_pass(inputs, training=True).loss
                grads = tape.gradient(loss, trainable)
                state, new = optimizer.next(state, trainable, tuple(grads))
                for v, t in zip(trainable, new):
                    v.assign(t)
                return state, group, consistent

            _, group, consistent = data.reduce(
                (state, tf.constant(-1, tf.int32), tf.constant(True)), step)
            checks = [
                tf.debugging.assert_non_negative(
                    group, message=f"{GROUP}: below 0, or a client dataset without elements"),
                tf.debugging.assert_less(
                    group, num_groups, message=f"{GROUP}: out of range; the plan has "
                    f"{num_groups} privacy groups [0, {num_groups})"),
                tf.debugging.Assert(consistent, [f"{GROUP}: the elements of a client "
                                                 "dataset name different groups"])]
            with tf.control_dependencies(checks):
                delta = tf.nest.map_structure(lambda v, t: v - t, weights.trainable,
                                              initial.trainable)
                one_hot = tf.one_hot(tf.gather(to_aggregation, group), num_aggregation)
            return collections.OrderedDict(update=delta, group=one_hot, seed=dpmath.secret_seed())

        tagged = train(hparams, initial, data)
        return tff.learning.templates.ClientResult(update=tagged,
                                                   update_weight=tf.constant(1.0))

    @tff.tensorflow.computation
    def no_measurement():
        return collections.OrderedDict()

    @tff.federated_computation(init_fn.type_signature.result,
                               tff.FederatedType(weights_type, tff.CLIENTS),
                               tff.FederatedType(data_type, tff.CLIENTS))
    def next_fn(state, weights, data):
        result = tff.federated_map(client_update,
                                   (tff.federated_broadcast(state), weights, data))
        return tff.templates.MeasuredProcessOutput(
            state=state, result=result,
            measurements=tff.federated_eval(no_measurement, tff.SERVER))

    @tff.tensorflow.computation(hparams_type)
    def get_hparams(state):
        return state

    @tff.tensorflow.computation(hparams_type, hparams_type)
    def set_hparams(state, hparams):
        del state
        return hparams

    return tff.learning.templates.ClientWorkProcess(
        init_fn, next_fn, get_hparams_fn=get_hparams, set_hparams_fn=set_hparams)


def build_group_aggregator(factory, tagged_type, update_type):
    """The method's factory as the weighted ``AggregationProcess`` that
    ``compose_learning_process`` wants: the weights dropped at the clients, the result in
    the trainable weights' own container. A factory that aggregates bare updates (TFF's
    ``DifferentiallyPrivateFactory``) gets the update without its tag."""
    grouped = getattr(factory, "needs_client_info", False)
    if grouped:                    # the factories read the tag's fields by attribute
        inner = factory.create(tff.StructType(list(tff.structure.iter_elements(tagged_type))))
    else:
        inner = factory.create(update_type)

        @tff.tensorflow.computation(tagged_type)
        def untag(value):
            return value.update

    restore = restore_container(update_type, inner.next.type_signature.result.result.member)

    @tff.federated_computation(inner.initialize.type_signature.result,
                               tff.FederatedType(tagged_type, tff.CLIENTS),
                               tff.FederatedType(np.float32, tff.CLIENTS))
    def next_fn(state, value, weight):
        del weight                                   # never leaves the clients
        out = inner.next(state, value if grouped else tff.federated_map(untag, value))
        return tff.templates.MeasuredProcessOutput(
            state=out.state, result=tff.federated_map(restore, out.result),
            measurements=out.measurements)

    return tff.templates.AggregationProcess(inner.initialize, next_fn)


def build_finalizer(server_optimizer, weights_type):
    """TFF's optimizer finalizer stepping along the aggregate (module docstring)."""
    base = tff.learning.templates.build_apply_optimizer_finalizer(server_optimizer,
                                                                   weights_type)
    update_type = weights_type.trainable

    @tff.tensorflow.computation(update_type)
    def negate(update):
        return tf.nest.map_structure(tf.negative, update)

    @tff.federated_computation(base.initialize.type_signature.result,
                               tff.FederatedType(weights_type, tff.SERVER),
                               tff.FederatedType(update_type, tff.SERVER))
    def next_fn(state, weights, update):
        return base.next(state, weights, tff.federated_map(negate, update))

    return tff.learning.templates.FinalizerProcess(
        base.initialize, next_fn, get_hparams_fn=base.get_hparams,
        set_hparams_fn=base.set_hparams)


def build_group_dp_fed_avg(model_fn, client_optimizer_fn, server_optimizer_fn=None, *,
                           plan: GroupDPPlan, noise_seed: Optional[int] = None,
                           record_aggregation_factory=None):
    """A ``tff.learning.templates.LearningProcess`` running ``plan``'s method (module
    docstring): ``initialize``, ``next(state, client_datasets)``, ``get_model_weights``,
    ``set_model_weights``, ``get_hparams`` / ``set_hparams`` (the client optimizer's
    learning rate, e.g. GDPFed's decay per round, and the server optimizer's).

    ``model_fn``: a no-argument function returning a ``tff.learning`` model whose
    ``input_spec`` is a mapping; ``client_optimizer_fn`` / ``server_optimizer_fn``: a
    ``tff.learning.optimizers.Optimizer`` or a function returning one (server default:
    SGD at 1.0, Alg. 1 line 19); ``plan``: :func:`~tff_idp.learning.plan_from_budgets`;
    ``noise_seed``: the server's draws (``noise_draw="group"`` plans, empty groups) come
    from a secret seed by default; an int32 fixes them for a reproducible simulation, and
    every guarantee then holds only while that seed is secret;
    ``record_aggregation_factory``: how the noised records are summed (e.g.
    ``tff.aggregators.SecureSumFactory``). PFA's public rows need each cohort client's row
    among the round's public clients, which a client cannot know: PFA is refused here (its
    runs go through ``tff_idp.run``)."""
    if not isinstance(plan, GroupDPPlan):
        raise TypeError(f"plan={plan!r}: must be a tff_idp.learning.GroupDPPlan "
                        "(tff_idp.learning.plan_from_budgets)")
    if plan.plan.public_group is not None:
        raise ValueError(f"plan: {plan.method} sends its public clients' rows by slot, which "
                         "this process cannot assign; run it with python -m tff_idp.run")
    check_noise_seed(noise_seed)
    client_optimizer = _optimizer("client_optimizer_fn", client_optimizer_fn)
    server_optimizer = _optimizer("server_optimizer_fn", server_optimizer_fn) \
        if server_optimizer_fn is not None else tff.learning.optimizers.build_sgdm(1.0)
    factory = plan.aggregation_factory(noise_seed, record_aggregation_factory)
    data_spec, weights_type = _check_model(model_fn)

    @tff.tensorflow.computation
    def initial_model_weights():
        return tff.learning.models.ModelWeights.from_model(model_fn())

    client_work = build_client_work(model_fn, client_optimizer, plan, data_spec, weights_type)
    tagged_type = client_work.next.type_signature.result.result.member.update
    aggregator = build_group_aggregator(factory, tagged_type, weights_type.trainable)
    return tff.learning.templates.compose_learning_process(
        initial_model_weights, tff.learning.templates.build_broadcast_process(weights_type),
        client_work, aggregator, build_finalizer(server_optimizer, weights_type))


__all__ = ["GROUP", "with_group", "build_group_dp_fed_avg", "build_client_work",
           "build_group_aggregator", "build_finalizer"]
