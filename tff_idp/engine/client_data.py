"""Each client's training examples of a round, in the order it uses them: drawn from (seed,
round, client[, phase]) with numpy, so both backends train on the same arrays (the fast
backend takes them as (x, y, order) for phases of epochs, ``backends.expand``). The order's
draw and the cohort's padded batches are the data layer's (``data.client_dataset``); this
module says which key each client's order is drawn from."""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from ..data.client_dataset import DATA_ORDER_VERSION, training_order
from .experiment import Experiment


def input_dtype(data) -> tf.DType:
    """int32 for token inputs (character windows), float32 for features and images."""
    return tf.int32 if np.issubdtype(data.x_train.dtype, np.integer) else tf.float32


def client_example_order(exp: Experiment, client: int, rnd: int, phase=None, index: int = 0):
    """:func:`client_examples` as (the client's example ids, positions into them in
    training order): the examples are ``ids[order]``."""
    cfg = exp.cfg
    epochs = cfg.local_epochs if phase is None else phase.epochs
    steps = cfg.local_steps if phase is None else phase.steps
    idx = exp.client_indices[client]
    key = [cfg.seed, rnd, client, DATA_ORDER_VERSION] + ([index] if index else [])
    return idx, training_order(len(idx), key, epochs,
                               None if epochs else steps * cfg.batch_size,
                               with_replacement=cfg.data_sampling == "wr")


def client_examples(exp: Experiment, client: int, rnd: int, phase=None, index: int = 0):
    """Client ``client``'s training examples of round ``rnd`` for local phase ``index``
    (``phase``: its steps or epochs; default the config's ``local_steps`` /
    ``local_epochs``), in the order it uses them: permutations of its examples drawn from
    (seed, round, client) (and the phase index after the first), one after another, as many
    as the epochs ask (batched by the backend, the last batch may be short) or the first
    ``steps * batch_size`` of enough of them (full batches only); with ``data_sampling =
    "wr"``, ``steps * batch_size`` independent uniform draws from the same generator.
    Returned as arrays (x, y); both backends batch these same arrays."""
    ids, order = client_example_order(exp, client, rnd, phase, index)
    x = exp.data.x_train[ids[order]].astype(input_dtype(exp.data).as_numpy_dtype)
    return x, exp.data.y_train[ids[order]].astype(np.int32)    # int8 targets of a text view


def phase_examples(exp: Experiment, client: int, rnd: int, phase, index: int, once=None):
    """What the backends get of a phase: :func:`client_examples`, or for a phase of epochs
    or on features computed once (``Phase.on_features``) (x, y, order): the client's
    examples once and the training order as positions into them (``backends.expand``), so
    the fast backend holds each client's examples once whatever the epochs, and once for
    all such phases of a round: ``once``, the (x, y) an earlier phase of the client got in
    this round, is shared rather than copied (the ids are the client's, the same in every
    phase)."""
    if not (phase.on_features or phase.epochs):
        return client_examples(exp, client, rnd, phase, index)
    ids, order = client_example_order(exp, client, rnd, phase, index)
    if once is None:
        once = (exp.data.x_train[ids].astype(input_dtype(exp.data).as_numpy_dtype),
                exp.data.y_train[ids].astype(np.int32))
    return once[0], once[1], order.astype(np.int64)
