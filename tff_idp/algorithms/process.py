"""The TFF iterative process shared by every method of GDPFed's family.

One round (papers 000/003 Algorithm 1; Algorithm 2 when there is one group):
broadcast theta^t -> every sampled client runs ``local_steps`` mini-batch SGD(momentum) steps
at the round's learning rate eta * decay^t -> Delta = theta_local - theta^t -> the aggregation
factory (clip, noise, group sums, top-k, reweighting) -> theta^{t+1} = theta^t + aggregate.

``next(state, client_data, client_info)``: ``client_data`` are the cohort's tf.data datasets
of (x, y) batches, ``client_info`` per client an OrderedDict(group=float32[M] one-hot,
seed=int32[2], slot=int32: the client's row among the cohort's public clients for PFA, else
-1).

A method's client work and server step come as a :class:`~tff_idp.algorithms.client_work.
ClientProgram` (``program``; default: one phase of ``local_steps`` on the whole model, the
model change sent, theta + server_lr * aggregate). With several phases each client's data is
a list of datasets, one per phase. With a personal part (``program.split``), clients stay
stateless as TFF requires: ``next(state, client_data, client_info, client_personal)`` takes
each cohort client's personal tensors as a CLIENTS-placed argument and returns
``(state, metrics, new_personal)``, the updated ones CLIENTS-placed, in cohort order; the
runner keeps them between rounds (``tff_idp.engine.personal_state``).
Factories with ``needs_client_info = True`` (ours) aggregate (update, group, seed); any other
``tff.aggregators.UnweightedAggregationFactory`` (e.g. TFF's adaptive-clipping
``DifferentiallyPrivateFactory``) aggregates the bare update.
"""
from __future__ import annotations

import collections
from typing import Callable, Optional, Sequence

import numpy as np
import tensorflow as tf

from ..runtime import import_tff
from .client_work import ClientProgram, LocalTraining, PhaseSteps
from .round_parts import Phase, client_output, server_update

tff = import_tff()


def build_group_dp_process(model_fn: Callable[[], tf.keras.Model],
                           initial_weights: Sequence[np.ndarray],
                           aggregation_factory,
                           element_spec,
                           num_groups: int,
                           training: LocalTraining = LocalTraining(),
                           program: Optional[ClientProgram] = None,
                           client_diagnostics: bool = False):
    """Build the process. ``element_spec`` is the (x, y) batch spec of client datasets;
    ``training`` (:class:`LocalTraining`) how clients train and the server steps.
    ``client_diagnostics``: also return the cohort's mean train loss, which the clients send
    un-noised (``metrics.train_loss``): a simulation diagnostic a private deployment must not
    send (``tff_idp.privacy.threat_model.CLIENT_DIAGNOSTICS``); the factory's own switch of
    the same name covers the norms and clipping."""
    weights_np = [np.asarray(w, np.float32) for w in initial_weights]
    weights_type = tff.StructWithPythonType(
        [tff.TensorType(np.float32, w.shape) for w in weights_np], list)
    if program is None:                      # FedAvg's client work on the whole model
        from ..models.split import ParameterSplit
        program = ClientProgram(
            [Phase("all", training.local_steps, None if training.local_steps else 1)],
            ParameterSplit("none", (None,) * len(weights_np),
                           tuple(w.shape for w in weights_np)),
            client_output, server_update)
    masks, personal = program.masks, program.personal
    phases = [PhaseSteps(None if ph.epochs else ph.steps, spec)
              for ph, spec in zip(program.phases, program.phase_specs())]
    sparse = program.reparam is not None       # clients also say where their noise lands
    sequence = tff.SequenceType(tff.types.tensorflow_to_type(element_spec))
    data_type = sequence if len(phases) == 1 else tff.StructWithPythonType(
        [sequence] * len(phases), list)
    personal_type = tff.StructWithPythonType(
        [tff.TensorType(np.float32, weights_np[i].shape) for i in personal], list)
    info_type = tff.StructWithPythonType(
        [("group", tff.TensorType(np.float32, [num_groups])),
         ("seed", tff.TensorType(np.int32, [2])), ("slot", tff.TensorType(np.int32))],
        collections.OrderedDict)
    grouped = getattr(aggregation_factory, "needs_client_info", False)
    if grouped:   # our group-aware factories aggregate (update, group, seed)
        update_process = aggregation_factory.create(tff.StructType(
            [("update", weights_type), ("group", info_type["group"]),
             ("seed", info_type["seed"]), ("slot", info_type["slot"])]
            + ([("support", weights_type)] if sparse else [])))
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
        """Start (shared from the server, personal from the client), phases, output (and,
        with sparsified training, its support: a full-shape 0/1 per tensor)."""
        start = program.start(weights, kept)
        final, loss = trainer.train_phases(model, start, [data] if len(phases) == 1
                                           else list(data), lr, phases)
        out, support = program.send(start, final, batched=False)
        if sparse:
            out = [out, [tf.ones_like(w) if m is None else m for w, m in zip(start, support)]]
        return out, loss, program.kept(final)

    output_type = tff.StructWithPythonType([weights_type, weights_type], list) if sparse \
        else weights_type
    if personal:
        @tff.tensorflow.computation(weights_type, data_type, np.float32, personal_type)
        def client_train(weights, data, lr, kept):
            return tf.function(work)(model_fn(), list(weights), data, lr, list(kept))
    else:
        @tff.tensorflow.computation(weights_type, data_type, np.float32)
        def client_train(weights, data, lr):
            return tf.function(work)(model_fn(), list(weights), data, lr, [])[:2]

    @tff.tensorflow.computation(output_type, info_type)
    def pack(output, info):
        value = collections.OrderedDict(
            update=output[0] if sparse else output, group=info["group"], seed=info["seed"],
            slot=info["slot"])
        if sparse:
            value["support"] = output[1]
        return value

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
