"""The TFF processes of GDPFed's family, the suite's and the library's, from one client step.

Both are built here from the same parts: a client's round (:func:`client_round`: its start
weights, the method's local phases of ``ClientTrainer.step``, what it sends:
``tff_idp.algorithms.client_work``), the record the aggregation factory sums
(:func:`record_type`: the update, the client's aggregation group one-hot, its noise seed, its
public-row slot and, with sparsified training, where its noise lands) and the method's
factory (clip, noise, group sums, Top_k, reweighting: GDPFed Alg. 1 lines 12-19).

On the TFF backend (``python -m tff_idp.run``) every method whose round is FedAvg's runs the
library's process itself (:func:`compose_group_dp_fed_avg` with ``simulation=True``: the
clients' noise seeds and PFA's public-row slots ride in their data for a reproducible
simulation; a run that reports its clients' un-noised train loss gets it as a client-work
metric); the methods with a personal part or their own server step run
:func:`build_group_dp_process`, a ``tff.templates.IterativeProcess`` on Keras models,
``next(state, client_data, client_info[, client_personal])``, from the same client round. That
one stays an iterative process rather than a ``LearningProcess`` because it returns each
client's kept personal tensors CLIENTS-placed, which a ``LearningProcess`` cannot (its
``next`` returns server state and server metrics only).

:func:`build_group_dp_fed_avg` is the library's ``tff.learning`` ``LearningProcess``, composed
with ``tff.learning.templates.compose_learning_process``:

- TFF's broadcast distributor;
- the client work: :func:`client_round` on FedAvg's program (the whole model, every batch of
  the client's data) through the ``tff.learning`` model (``learning_step_model``) and the
  client optimizer (``LearningOptimizer``), sending its model change Delta tagged with its
  aggregation group (one-hot) and a noise seed drawn from the operating system in the client
  (:func:`~tff_idp.dpmath.secret_seed`): nothing else leaves the client (no loss or metric:
  un-noised client statistics, ``tff_idp.privacy.threat_model``);
- the method's aggregation factory, the one the suite's own rounds use
  (``GroupDPPlan.aggregation_factory``), as TFF's weighted aggregator whose weights are
  dropped at the clients (DP averages clients uniformly);
- TFF's optimizer finalizer on the aggregate (theta + server_lr * aggregate with the default
  SGD(1.0): line 19). TFF's optimizers descend a gradient, so the finalizer hands them the
  aggregate's negative.

Each library client's privacy group rides with its data: every element of its
``tf.data.Dataset`` has a ``group`` field (int32, the privacy group's index in [0,
plan.num_groups), the same in every element) beside the model's own ``input_spec`` fields
(``with_group`` adds it and checks it). A client with no element, a group out of range, or
two groups fails the round with TensorFlow's assertion naming ``group`` (inside TFF's runtime
error). The cohort is the caller's: sample it as the plan assumes
(``tff_idp.learning.sample_cohort``), or the plan's epsilons do not hold.
"""
from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import Callable, Optional, Sequence

import numpy as np
import tensorflow as tf

from ..runtime import import_tff
from .. import dpmath
from ..algorithms.client_optimizer import LearningOptimizer
from ..algorithms.client_work import (ClientProgram, ClientTrainer, LocalTraining,
                                      keras_step_model, learning_step_model)
from ..algorithms.round_parts import Phase, client_output, server_update
from ..models.split import ParameterSplit
from ..queries.group_gaussian import check_noise_seed
from .aggregator import restore_container
from .plan import GroupDPPlan

tff = import_tff()

GROUP = "group"                     # the element field naming a client's privacy group
# the element fields of a simulation (the TFF backend): a client's noise seed (int32[2]),
# drawn by the simulator (reproducible, private only while the seeds are secret), and its row
# among the round's public clients (PFA; -1 for the others)
SEED = "seed"
SLOT = "slot"


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


def whole_model_program(shapes: Sequence, local_steps: Optional[int]) -> ClientProgram:
    """FedAvg's client work, every method's default: one phase training the whole model for
    ``local_steps`` batches (None: every batch of the client's data), the model change sent
    (GDPFed Alg. 1 line 11), theta + server_lr * aggregate on the server (line 19)."""
    return ClientProgram([Phase("all", local_steps, None if local_steps else 1)],
                         ParameterSplit("none", (None,) * len(shapes), tuple(shapes)),
                         client_output, server_update)


def client_round(trainer: ClientTrainer, model, program: ClientProgram, weights, datasets, lr,
                 kept=()):
    """One client's round in both processes (GDPFed Alg. 1 lines 6-11; a method's
    ``ClientProgram``): its start weights (the broadcast ones, its own ``kept`` where the
    model is personal), the program's phases of ``ClientTrainer.step`` through ``model`` (a
    ``StepModel``) on ``datasets`` (one per phase), what it sends and where its noise may
    land. Returns (output, support or None, mean training loss, kept personal tensors)."""
    start = program.start(list(weights), list(kept))
    final, loss = trainer.train_phases(model, start, datasets, lr, program.step_phases())
    out, support = program.send(start, final, batched=False)
    return out, support, loss, program.kept(final)


def record_type(update_type, num_groups: int, sparse: bool = False):
    """What every client hands the aggregation factory, in both processes: its ``update``,
    its aggregation ``group`` one-hot, its noise ``seed`` (int32[2]), its ``slot`` among the
    round's public clients (PFA; -1 otherwise) and, with sparsified training, the
    ``support`` where its noise lands (a full-shape 0/1 per tensor)."""
    fields = [("update", update_type), ("group", tff.TensorType(np.float32, [num_groups])),
              ("seed", tff.TensorType(np.int32, [2])), ("slot", tff.TensorType(np.int32))]
    return tff.StructType(fields + ([("support", update_type)] if sparse else []))


def record(update, group, seed, slot, support=None) -> collections.OrderedDict:
    """A client's :func:`record_type` value (``support`` only with sparsified training)."""
    value = collections.OrderedDict(update=update, group=group, seed=seed, slot=slot)
    if support is not None:
        value["support"] = support
    return value


def build_group_dp_process(model_fn: Callable[[], tf.keras.Model],
                           initial_weights: Sequence[np.ndarray],
                           aggregation_factory,
                           element_spec,
                           num_groups: int,
                           training: LocalTraining = LocalTraining(),
                           program: Optional[ClientProgram] = None,
                           client_diagnostics: bool = False):
    """The suite's iterative process (what the TFF backend runs for a method whose round is
    not FedAvg's: a personal part, phases, sparsified training, a server step of its own).
    One round (papers 000/003 Algorithm 1; Algorithm 2 when there is one group): broadcast
    theta^t -> every sampled client runs :func:`client_round` at the round's learning rate
    eta * decay^t -> the aggregation factory -> ``program.server_update`` (theta^{t+1} =
    theta^t + server_lr * aggregate).

    ``element_spec``: the (x, y) batch spec of client datasets; ``training``
    (``LocalTraining``): how clients train and the server steps; ``program``: the method's
    ``ClientProgram`` (default :func:`whole_model_program`; with several phases each
    client's data is a list of datasets, one per phase). ``next(state, client_data,
    client_info)``: ``client_info`` per client an OrderedDict(group=float32[M] one-hot,
    seed=int32[2], slot=int32: its row among the cohort's public clients for PFA, else -1).
    With a personal part (``program.split``) clients stay stateless as TFF requires:
    ``next(state, client_data, client_info, client_personal)`` takes each cohort client's
    personal tensors CLIENTS-placed and returns ``(state, metrics, new_personal)``, in
    cohort order (the runner keeps them: ``tff_idp.engine.personal_state``). Factories with
    ``needs_client_info = True`` (ours) aggregate :func:`record_type`; any other
    ``tff.aggregators.UnweightedAggregationFactory`` (e.g. TFF's adaptive-clipping
    ``DifferentiallyPrivateFactory``) aggregates the bare update.
    ``client_diagnostics``: also return the cohort's mean train loss, which the clients send
    un-noised (``metrics.train_loss``): a simulation diagnostic a private deployment must not
    send (``tff_idp.privacy.threat_model.CLIENT_DIAGNOSTICS``); the factory's own switch of
    the same name covers the norms and clipping."""
    weights_np = [np.asarray(w, np.float32) for w in initial_weights]
    weights_type = tff.StructWithPythonType(
        [tff.TensorType(np.float32, w.shape) for w in weights_np], list)
    if program is None:
        program = whole_model_program([w.shape for w in weights_np], training.local_steps)
    masks, personal = program.masks, program.personal
    sparse = program.reparam is not None       # clients also say where their noise lands
    sequence = tff.SequenceType(tff.types.tensorflow_to_type(element_spec))
    data_type = sequence if len(program.phases) == 1 else tff.StructWithPythonType(
        [sequence] * len(program.phases), list)
    personal_type = tff.StructWithPythonType(
        [tff.TensorType(np.float32, weights_np[i].shape) for i in personal], list)
    records = record_type(weights_type, num_groups, sparse)
    info_type = tff.StructWithPythonType(
        [(name, records[name]) for name in ("group", "seed", "slot")], collections.OrderedDict)
    grouped = getattr(aggregation_factory, "needs_client_info", False)
    if grouped:   # our group-aware factories aggregate the whole record
        update_process = aggregation_factory.create(records)
    elif sparse:
        raise ValueError("sparsified client updates need a group-aware aggregation factory")
    else:         # any stock TFF factory (e.g. DifferentiallyPrivateFactory) sees the update
        update_process = aggregation_factory.create(weights_type)

    @tff.tensorflow.computation
    def initial_server_weights():
        return [tf.constant(w) for w in weights_np]

    @tff.federated_computation
    def init_fn():
        return tff.federated_zip(collections.OrderedDict(
            weights=tff.federated_eval(initial_server_weights, tff.SERVER),
            round=tff.federated_value(np.int32(0), tff.SERVER),
            aggregator=update_process.initialize()))

    @tff.tensorflow.computation(np.int32)
    def round_lr(round_num):
        return tf.constant(training.local_lr, tf.float32) * tf.pow(
            tf.constant(training.lr_decay, tf.float32), tf.cast(round_num, tf.float32))

    trainer = training.trainer(program.reparam)

    def work(model, weights, data, lr, kept):
        out, support, loss, kept = client_round(
            trainer, keras_step_model(model), program, weights,
            [data] if len(program.phases) == 1 else list(data), lr, kept)
        if sparse:
            out = [out, [tf.ones_like(w) if m is None else m for w, m in zip(out, support)]]
        return out, loss, kept

    output_type = tff.StructWithPythonType([weights_type, weights_type], list) if sparse \
        else weights_type
    if personal:
        @tff.tensorflow.computation(weights_type, data_type, np.float32, personal_type)
        def client_train(weights, data, lr, kept):
            return tf.function(work, autograph=False)(model_fn(), list(weights), data, lr,
                                                      list(kept))
    else:
        @tff.tensorflow.computation(weights_type, data_type, np.float32)
        def client_train(weights, data, lr):
            return tf.function(work, autograph=False)(model_fn(), list(weights), data, lr,
                                                      [])[:2]

    @tff.tensorflow.computation(output_type, info_type)
    def pack(output, info):
        return record(output[0] if sparse else output, info["group"], info["seed"],
                      info["slot"], output[1] if sparse else None)

    @tff.tensorflow.computation(weights_type, weights_type, np.int32)
    def server_apply(weights, update, round_num):
        return (program.server_update(list(weights), list(update), training.server_lr, masks),
                round_num + 1)

    state_type = init_fn.type_signature.result

    def round_fn(state, client_data, client_info, client_personal):
        lr = tff.federated_broadcast(tff.federated_map(round_lr, state.round))
        args = (tff.federated_broadcast(state.weights), client_data, lr)
        if client_personal is None:
            deltas, losses = tff.federated_map(client_train, args)
        else:
            deltas, losses, kept = tff.federated_map(client_train, args + (client_personal,))
        if grouped:
            agg = update_process.next(state.aggregator,
                                      tff.federated_map(pack, (deltas, client_info)))
        else:
            agg = update_process.next(state.aggregator, deltas)
        new_weights, new_round = tff.federated_map(
            server_apply, (state.weights, agg.result, state.round))
        new_state = tff.federated_zip(collections.OrderedDict(
            weights=new_weights, round=new_round, aggregator=agg.state))
        metrics = collections.OrderedDict(aggregator=agg.measurements)
        if client_diagnostics:         # un-noised client data: a simulation's diagnostic
            metrics["train_loss"] = tff.federated_mean(losses)
        metrics = tff.federated_zip(metrics)
        if client_personal is None:
            return new_state, metrics
        return new_state, metrics, kept

    clients = (tff.FederatedType(data_type, tff.CLIENTS),
               tff.FederatedType(info_type, tff.CLIENTS))
    if personal:
        @tff.federated_computation(state_type, *clients,
                                   tff.FederatedType(personal_type, tff.CLIENTS))
        def next_fn(state, client_data, client_info, client_personal):
            return round_fn(state, client_data, client_info, client_personal)
    else:
        @tff.federated_computation(state_type, *clients)
        def next_fn(state, client_data, client_info):
            return round_fn(state, client_data, client_info, None)

    return tff.templates.IterativeProcess(init_fn, next_fn)


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


def _check_model(model_fn, simulation: bool = False):
    """The model's input_spec (a mapping without ``group``) and its weights type; the
    clients' data spec adds ``group`` (and in a simulation ``seed`` and ``slot``)."""
    with tf.Graph().as_default():
        model = model_fn()
    if not isinstance(model, tff.learning.models.VariableModel):
        raise TypeError(f"model_fn={model_fn!r}: must return a tff.learning.models."
                        f"VariableModel (e.g. from_keras_model), got {type(model).__name__}")
    spec = model.input_spec
    if not isinstance(spec, Mapping) or GROUP in spec:
        raise TypeError(f"model_fn: input_spec must be a mapping without a {GROUP!r} field "
                        f"(OrderedDict(x=, y=)), got {spec}")
    tags = {GROUP: tf.TensorSpec([None], tf.int32)}
    if simulation:
        tags[SEED] = tf.TensorSpec([None, 2], tf.int32)
        tags[SLOT] = tf.TensorSpec([None], tf.int32)
    data_spec = collections.OrderedDict(spec, **tags)
    return data_spec, tff.learning.models.weights_type_from_model(model)


def _data_group(data, num_groups: int):
    """The privacy group every element of a library client's ``data`` names, with the
    assertions that fail the round on no element, a group out of range, or two groups."""
    def read(acc, batch):
        group, consistent = acc
        tags = batch[GROUP]
        group = tf.where(group < 0, tags[0], group)
        return group, tf.logical_and(consistent, tf.reduce_all(tf.equal(tags, group)))

    group, consistent = data.reduce((tf.constant(-1, tf.int32), tf.constant(True)), read)
    checks = [
        tf.debugging.assert_non_negative(
            group, message=f"{GROUP}: below 0, or a client dataset without elements"),
        tf.debugging.assert_less(
            group, num_groups, message=f"{GROUP}: out of range; the plan has "
            f"{num_groups} privacy groups [0, {num_groups})"),
        tf.debugging.Assert(consistent, [f"{GROUP}: the elements of a client "
                                         "dataset name different groups"])]
    return group, checks


def build_client_work(model_fn, optimizer, to_aggregation, num_aggregation: int, data_spec,
                      weights_type, train_loss: bool = False):
    """The library's client work (module docstring): :func:`client_round` on FedAvg's program
    (every batch of the client's data) through the ``tff.learning`` model and optimizer,
    its model change tagged as :func:`record_type` with its aggregation group
    (``to_aggregation[group]`` of ``num_aggregation``), a seed (fresh from the operating
    system, or the data's ``seed`` field in a simulation) and its public-row slot (the data's
    ``slot`` in a simulation, else -1). ``train_loss``: the clients' mean training loss, un-noised,
    is the work's measurement (``train_loss``: a non-private run's, or a simulation's
    diagnostic, ``tff_idp.privacy.threat_model``); otherwise nothing but the record leaves
    a client."""
    to_aggregation = np.asarray(to_aggregation, np.int32)
    num_groups = len(to_aggregation)
    simulation = SEED in data_spec
    program = whole_model_program([t.shape for t in weights_type.trainable], None)
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

        @tf.function(autograph=False)
        def train(hparams, initial, data):
            tf.nest.map_structure(lambda v, t: v.assign(t), weights, initial)
            group, checks = _data_group(data, num_groups)
            if simulation:          # the simulator's seed and slot, in every element
                seed, slot = data.take(1).reduce((tf.zeros([2], tf.int32), tf.constant(-1)),
                                                 lambda _, b: (b[SEED][0], b[SLOT][0]))
            else:
                seed, slot = dpmath.secret_seed(), tf.constant(-1, tf.int32)
            batches = data.map(lambda b: (collections.OrderedDict(
                (k, v) for k, v in b.items() if k not in (GROUP, SEED, SLOT)), b[GROUP]))
            trainer = ClientTrainer(LearningOptimizer(optimizer, hparams))
            out, _, loss, _ = client_round(trainer, learning_step_model(model), program,
                                           tf.nest.flatten(initial.trainable), [batches],
                                           tf.constant(1.0))
            with tf.control_dependencies(checks):
                delta = tf.nest.pack_sequence_as(weights.trainable,
                                                 [tf.identity(d) for d in out])
                one_hot = tf.one_hot(tf.gather(to_aggregation, group), num_aggregation)
            return record(delta, one_hot, seed, slot), loss

        tagged, loss = train(hparams, initial, data)
        result = tff.learning.templates.ClientResult(update=tagged,
                                                     update_weight=tf.constant(1.0))
        return (result, loss) if train_loss else result

    @tff.tensorflow.computation
    def no_measurement():
        return collections.OrderedDict()

    @tff.federated_computation(init_fn.type_signature.result,
                               tff.FederatedType(weights_type, tff.CLIENTS),
                               tff.FederatedType(data_type, tff.CLIENTS))
    def next_fn(state, weights, data):
        outputs = tff.federated_map(client_update,
                                    (tff.federated_broadcast(state), weights, data))
        if not train_loss:
            return tff.templates.MeasuredProcessOutput(
                state=state, result=outputs,
                measurements=tff.federated_eval(no_measurement, tff.SERVER))
        return tff.templates.MeasuredProcessOutput(   # un-noised: a diagnostic (docstring)
            state=state, result=outputs[0], measurements=tff.federated_zip(
                collections.OrderedDict(train_loss=tff.federated_mean(outputs[1]))))

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
        def untag(value):           # an OrderedDict here: value.update is dict's method
            return value["update"]

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
    return compose_group_dp_fed_avg(model_fn, client_optimizer, server_optimizer, factory,
                                    plan.plan.aggregation_groups,
                                    plan.plan.num_aggregation_groups)


def compose_group_dp_fed_avg(model_fn, client_optimizer, server_optimizer, factory,
                             to_aggregation: Sequence[int], num_aggregation: int,
                             simulation: bool = False, train_loss: bool = False):
    """The ``LearningProcess`` of :func:`build_group_dp_fed_avg` from its parts, checked
    there: a ``tff.learning`` ``model_fn``, TFF optimizers, a built aggregation factory, the
    aggregation group of each privacy group (``to_aggregation``, of ``num_aggregation``).
    ``simulation``: every element also carries the client's noise seed (``seed``, int32[2])
    instead of the client drawing it from the operating system, and its row among the
    round's public clients (``slot``, PFA; -1 otherwise): what the TFF backend runs, a
    reproducible simulation whose guarantees against the server hold only while the seeds
    are secret. ``train_loss``: the clients' un-noised mean training loss is reported
    (``metrics["client_work"]["train_loss"]``; :func:`build_client_work`)."""
    data_spec, weights_type = _check_model(model_fn, simulation)

    @tff.tensorflow.computation
    def initial_model_weights():
        return tff.learning.models.ModelWeights.from_model(model_fn())

    client_work = build_client_work(model_fn, client_optimizer, to_aggregation,
                                    num_aggregation, data_spec, weights_type, train_loss)
    tagged_type = client_work.next.type_signature.result.result.member.update
    aggregator = build_group_aggregator(factory, tagged_type, weights_type.trainable)
    return tff.learning.templates.compose_learning_process(
        initial_model_weights, tff.learning.templates.build_broadcast_process(weights_type),
        client_work, aggregator, build_finalizer(server_optimizer, weights_type))


__all__ = ["GROUP", "SEED", "SLOT", "with_group", "compose_group_dp_fed_avg",
           "whole_model_program", "client_round", "record_type", "record",
           "build_group_dp_process", "build_group_dp_fed_avg", "build_client_work",
           "build_group_aggregator", "build_finalizer"]
