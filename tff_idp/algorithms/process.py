"""The TFF iterative process shared by every method of GDPFed's family.

One round (papers 000/003 Algorithm 1; Algorithm 2 when there is one group):
broadcast theta^t -> every sampled client runs ``local_steps`` mini-batch SGD(momentum) steps
at the round's learning rate eta * decay^t -> Delta = theta_local - theta^t -> the aggregation
factory (clip, noise, group sums, top-k, reweighting) -> theta^{t+1} = theta^t + aggregate.

``next(state, client_data, client_info)``: ``client_data`` are the cohort's tf.data datasets
of (x, y) batches, ``client_info`` per client an OrderedDict(group=float32[M] one-hot,
seed=int32[2], slot=int32: the client's row among the cohort's public clients for PFA, else
-1). The methods differ only in the factory and in how the cohort is sampled.
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
from .client_work import make_client_train

tff = import_tff()


def build_group_dp_process(model_fn: Callable[[], tf.keras.Model],
                           initial_weights: Sequence[np.ndarray],
                           aggregation_factory,
                           element_spec,
                           num_groups: int,
                           local_lr: float = 0.1, lr_decay: float = 0.99,
                           momentum: float = 0.0, local_steps: Optional[int] = 5,
                           client_optimizer: str = "sgd", server_lr: float = 1.0):
    """Build the process. ``element_spec`` is the (x, y) batch spec of client datasets.

    ``local_steps=None`` trains on the whole client dataset (the runner makes it finite, e.g.
    E epochs). ``client_optimizer``: "sgd" (heavy-ball momentum; GDPFed) or "adam" (paper
    004: Adam, beta = (0.9, 0.999), eps = 1e-7, fresh moments every round).
    ``server_lr`` scales the aggregate: theta^{t+1} = theta^t + server_lr * aggregate."""
    weights_np = [np.asarray(w, np.float32) for w in initial_weights]
    weights_type = tff.StructWithPythonType(
        [tff.TensorType(np.float32, w.shape) for w in weights_np], list)
    data_type = tff.SequenceType(tff.types.tensorflow_to_type(element_spec))
    info_type = tff.StructWithPythonType(
        [("group", tff.TensorType(np.float32, [num_groups])),
         ("seed", tff.TensorType(np.int32, [2])), ("slot", tff.TensorType(np.int32))],
        collections.OrderedDict)
    grouped = getattr(aggregation_factory, "needs_client_info", False)
    if grouped:   # our group-aware factories aggregate (update, group, seed)
        update_process = aggregation_factory.create(tff.StructType(
            [("update", weights_type), ("group", info_type["group"]),
             ("seed", info_type["seed"]), ("slot", info_type["slot"])]))
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
        return tf.constant(local_lr, tf.float32) * tf.pow(
            tf.constant(lr_decay, tf.float32), tf.cast(round_num, tf.float32))

    train_on_client = make_client_train(local_steps, client_optimizer, momentum)

    @tff.tensorflow.computation(weights_type, data_type, np.float32)
    def client_train(weights, dataset, lr):
        model = model_fn()
        return tf.function(train_on_client)(model, list(weights), dataset, lr)

    @tff.tensorflow.computation(weights_type, info_type)
    def pack(delta, info):
        return collections.OrderedDict(update=delta, group=info["group"], seed=info["seed"],
                                       slot=info["slot"])

    @tff.tensorflow.computation(weights_type, weights_type, np.int32)
    def server_apply(weights, update, round_num):
        new = [w + server_lr * u for w, u in zip(weights, update)]   # Alg. 1 line 19
        return new, round_num + 1

    state_type = init_fn.type_signature.result

    @tff.federated_computation(state_type, tff.FederatedType(data_type, tff.CLIENTS),
                               tff.FederatedType(info_type, tff.CLIENTS))
    def next_fn(state, client_data, client_info):
        lr = tff.federated_broadcast(tff.federated_map(round_lr, state.round))
        deltas, losses = tff.federated_map(
            client_train, (tff.federated_broadcast(state.weights), client_data, lr))
        if grouped:
            agg = update_process.next(state.aggregator,
                                      tff.federated_map(pack, (deltas, client_info)))
        else:
            agg = update_process.next(state.aggregator, deltas)
        new_weights, new_round = tff.federated_map(
            server_apply, (state.weights, agg.result, state.round))
        new_state = tff.federated_zip(collections.OrderedDict(
            weights=new_weights, round=new_round, aggregator=agg.state))
        metrics = tff.federated_zip(collections.OrderedDict(
            train_loss=tff.federated_mean(losses), aggregator=agg.measurements))
        return new_state, metrics

    return tff.templates.IterativeProcess(init_fn, next_fn)
