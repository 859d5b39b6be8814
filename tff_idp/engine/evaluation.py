"""Test metrics of a round: the global model on the held-out test set (:func:`evaluate`), or,
for a method with a personal part, each client's own model on its own test examples
(:class:`PersonalEvaluation`).

A client's test examples (:func:`client_test_sets`) are all test examples of the classes in
its training data (CENTAUR's protocol, which paper 001 follows: with label-skewed partitions
a client is tested on the labels it has). Its model is the shared part of the global model
with its own personal part. The reported number is the unweighted mean over clients (and the
spread: standard deviation, 10th percentile); clients without a test example (a class with
none) are left out.
"""
from __future__ import annotations

from typing import List, NamedTuple, Sequence

import numpy as np
import tensorflow as tf


EVAL_PIECE = 10_000        # examples whose logits are held at once


def evaluate(model, x, y, batch: int = 1000, lanes: int = 1):
    """(mean cross-entropy, accuracy) of ``model`` on (x, y), in batches, through one traced
    forward pass per model (graph mode: a paper-scale run evaluates 10,000 images every
    round, which eager Keras calls made a third of the run). ``lanes``: batches computed at
    once (:func:`_logits`), the same numbers."""
    loss_sum, correct, targets = 0.0, 0, 0
    for a in range(0, len(x), EVAL_PIECE):    # logits of a piece at a time: memory (TFF's
        logits = _logits(model, x[a:a + EVAL_PIECE], batch, lanes)  # task: 80 x 80 a window)
        yy = np.asarray(y[a:a + EVAL_PIECE], np.int32)
        loss_sum += float(tf.reduce_sum(tf.keras.losses.sparse_categorical_crossentropy(
            yy, logits, from_logits=True)))
        correct += int(np.sum(np.argmax(logits, -1) == yy))          # every target
        targets += yy.size
    return loss_sum / max(targets, 1), correct / max(targets, 1)


def _logits(model, x, batch: int = 1000, lanes: int = 1) -> np.ndarray:
    """``model``'s outputs on ``x`` through one traced forward pass of ``batch`` examples
    (fewer examples: the next power of two; the last batch zero-padded, so that clients'
    different counts trace it a few times, not once per count). ``lanes`` > 1: that many
    batches in one call, independent of each other, so that where every operation runs on
    one thread (``fast_lanes``, ``runtime.one_thread_per_op_for_lanes``) TensorFlow's
    inter-op threads compute them at once, one core each, instead of one batch on one core
    (docs/backends.md, "Evaluation in lanes"); each batch's logits are the same numbers."""
    cast = np.int32 if np.issubdtype(x.dtype, np.integer) else np.float32
    size = min(batch, 1 << max(0, int(len(x) - 1).bit_length()))
    starts = list(range(0, len(x), size))
    lanes = max(int(lanes), 1)
    out, i = [], 0
    while i < len(starts):
        group = starts[i:i + lanes] if len(starts) - i >= lanes else starts[i:i + 1]
        xbs = []
        for a in group:
            xb = x[a:a + size].astype(cast)
            if len(xb) < size:
                xb = np.concatenate([xb, np.zeros((size - len(xb),) + xb.shape[1:], cast)])
            xbs.append(xb)
        logits = _forward(model, len(group))(*xbs)
        out += [t.numpy()[:min(size, len(x) - a)] for t, a in zip(logits, group)]
        i += len(group)
    return np.concatenate(out)


def _forward(model, n: int):
    """A traced forward pass of ``model`` on ``n`` batches at once (a tuple of their
    logits), made once per model and n (kept on the model, as Keras keeps its own)."""
    name = "_tff_idp_forward" if n == 1 else f"_tff_idp_forward_{n}"
    forward = getattr(model, name, None)
    if forward is None:
        forward = tf.function(lambda *xbs: tuple(model(xb, training=False) for xb in xbs),
                              reduce_retracing=True)
        setattr(model, name, forward)
    return forward


def client_test_sets(y_train: np.ndarray, client_indices: Sequence[np.ndarray],
                     y_test: np.ndarray) -> List[np.ndarray]:
    """Per client, the ids of the test examples whose label occurs in its training data."""
    return [np.flatnonzero(np.isin(y_test, np.unique(y_train[idx]))) for idx in client_indices]


def _spread(losses, accs) -> dict:
    accs = np.asarray(accs, dtype=float)
    return {"personal_test_loss": float(np.mean(losses)),
            "personal_test_accuracy": float(np.mean(accs)),
            "personal_test_accuracy_std": float(np.std(accs)),
            "personal_test_accuracy_p10": float(np.percentile(accs, 10)),
            "personal_test_clients": int(len(accs))}


class ClientExamples(NamedTuple):
    """Examples and which of them each client holds: ``x``, ``y`` and ``ids`` (per client,
    the rows of x and y that are its own)."""
    x: np.ndarray
    y: np.ndarray
    ids: Sequence[np.ndarray]


class PersonalEvaluation:
    """Every client's model on its own test examples (``test``: :class:`ClientExamples`; module
    docstring), and on its own validation examples when there are any (``validation``: the
    training set's, each client's validation rows).

    When the model's logits are a linear read-out of features (``models.readout``: a Dense
    head, or PPSGD's two) and the personal part lies in the read-out, the features depend
    only on the shared body, so they are computed once per evaluation for the whole test
    set and each client's read-out is applied to its own rows of them (a matrix product per
    client); ``shortcut=False`` or any other split evaluates each client's full model in
    turn. ``finetune`` (:class:`ReadoutFineTune`): each client's read-out is first
    fine-tuned on its training examples, a throw-away copy (DP-FedAvg-fb, PMTL-FT, PPSGD's
    evaluation). ``reparam``: the forward pass on theta * M with M the top-k masks of the
    evaluated weights (DP-pFedDSU, ``dsu_eval_masked``). ``lanes``: batches of a forward
    pass computed at once (:func:`evaluate`; a run in ``fast_lanes``), the same numbers."""

    def __init__(self, model, split, test: ClientExamples, validation=None, finetune=None,
                 reparam=None, shortcut: bool = True, lanes: int = 1):
        from ..models import readout
        self.model, self.split, self.lanes = model, split, lanes
        self.x, self.y = test.x, test.y
        self.clients = [c for c, ids in enumerate(test.ids) if len(ids)]
        self.test_sets = [test.ids[c] for c in self.clients]
        self.validation, self.finetune, self.reparam = validation, finetune, reparam
        found = readout(model)
        self.readout = None
        if found is not None:
            tensor, heads, tensors = found
            flat = {i for t in tensors for i in t}
            if shortcut and set(split.personal_tensors) <= flat:
                features = (None if tensor is model.inputs[0]
                            else tf.keras.Model(model.inputs, tensor))
                self.readout = (features, [(h.use_bias, t) for h, t in zip(heads, tensors)])
        if finetune is not None and self.readout is None:
            raise ValueError("fine-tuning a read-out needs a model whose logits are a linear "
                             "read-out (a Dense head)")

    def __call__(self, weights, store, rnd: int = 0) -> dict:
        weights = [np.asarray(w) for w in weights]
        forward = weights if self.reparam is None else self.reparam.apply_np(weights)
        rows = [v for v in store.values]
        out = self._averaged(forward, rows) if rows else {}
        if self.readout is None:
            return self._full_models(forward, rows) | out
        heads = self._client_readouts(forward, rows)          # {tensor index: [N, ...]}
        if self.finetune is not None:
            heads = self.finetune(rnd, self._features, forward, heads, self.clients)
        out |= _spread(*self._score(self._features(forward, self.x), self.test_sets,
                                    self.y, heads))
        if self.validation is not None:
            x_train, y_train, val = self.validation
            ids = [val[c] for c in self.clients]
            flat = np.concatenate(ids) if ids else np.zeros(0, int)
            feats = self._features(forward, x_train[flat])
            at = np.cumsum([0] + [len(i) for i in ids])
            local = [np.arange(at[j], at[j + 1]) for j in range(len(ids))]
            losses, accs = self._score(feats, local, y_train[flat], heads, keep_empty=True)
            out |= _validation(losses, accs, [len(i) for i in ids])
        return out

    def _features(self, weights, x) -> np.ndarray:
        features = self.readout[0]
        if features is None:
            return x.reshape(len(x), -1).astype(np.float32)
        self.model.set_weights(weights)
        if not len(x):
            return np.zeros((0, features.output_shape[-1]), np.float32)
        return _logits(features, x, lanes=self.lanes)

    def _client_readouts(self, weights, rows) -> dict:
        """Each client's read-out tensors, [N, ...] per read-out tensor index: the global
        ones where shared, its own where personal."""
        n = len(self.clients)
        personal = dict(zip(self.split.personal_tensors, rows))
        out = {}
        for _, tensors in self.readout[1]:
            for i in tensors:
                m = self.split.masks[i]
                if m is None:
                    out[i] = np.repeat(weights[i][None], n, axis=0)
                else:
                    out[i] = weights[i][None] * m + personal[i][self.clients]
        return out

    def _score(self, feats, id_sets, y, heads, keep_empty=False):
        losses, accs = [], []
        for j, ids in enumerate(id_sets):
            if not len(ids):
                if keep_empty:
                    losses.append(np.nan)
                    accs.append(np.nan)
                continue
            logits = 0.0
            for use_bias, tensors in self.readout[1]:
                logits = logits + feats[ids] @ heads[tensors[0]][j] + (
                    heads[tensors[1]][j] if use_bias else 0.0)
            yy = y[ids]
            losses.append(float(np.mean(tf.keras.losses.sparse_categorical_crossentropy(
                yy, logits, from_logits=True))))
            accs.append(float(np.mean(np.argmax(logits, -1) == yy)))
        return losses, accs

    def _full_models(self, weights, rows) -> dict:
        losses, accs, vl, va, vn = [], [], [], [], []
        for j, (c, ids) in enumerate(zip(self.clients, self.test_sets)):
            self.model.set_weights(self.split.combine(weights, [v[c] for v in rows]))
            loss, acc = evaluate(self.model, self.x[ids], self.y[ids], lanes=self.lanes)
            losses.append(loss)
            accs.append(acc)
            if self.validation is not None:
                x_train, y_train, val = self.validation
                vn.append(len(val[c]))
                loss, acc = evaluate(self.model, x_train[val[c]], y_train[val[c]],
                                     lanes=self.lanes) \
                    if len(val[c]) else (np.nan, np.nan)
                vl.append(loss)
                va.append(acc)
        out = _spread(losses, accs)
        return out | (_validation(vl, va, vn) if self.validation is not None else {})

    def _averaged(self, weights, rows) -> dict:
        """The global model with every personal coordinate replaced by its mean over all
        clients, on the whole test set (002's second metric; one model where each client's
        is personal)."""
        self.model.set_weights(self.split.combine(weights, [v.mean(axis=0) for v in rows]))
        loss, acc = evaluate(self.model, self.x, self.y, lanes=self.lanes)
        return {"averaged_model_test_loss": loss, "averaged_model_test_accuracy": acc}


def _validation(losses, accs, counts) -> dict:
    """Mean over clients with validation examples of their validation loss and accuracy."""
    ok = [i for i, n in enumerate(counts) if n]
    if not ok:
        return {"validation_loss": float("nan"), "validation_accuracy": float("nan")}
    return {"validation_loss": float(np.mean([losses[i] for i in ok])),
            "validation_accuracy": float(np.mean([accs[i] for i in ok]))}


class ReadoutFineTune:
    """Each client fine-tunes a throw-away copy of its read-out before it is evaluated
    (DP-FedAvg-fb and PMTL-FT in CENTAUR's code, ``methods/DP_FedAvg_ft.py``: 15 epochs at
    lr_head on features computed once; PPSGD: its personal head): ``schedule.epochs`` passes
    over its training examples (``train``: :class:`ClientExamples`) in an order drawn from
    (seed, round, client, stream), batches of ``batch_size``, learning rate ``lr * lr_decay **
    round``, the client optimizer (``ClientTrainer``: momentum, weight decay), the
    read-out tensors ``trainable`` (per read-out tensor a factor or None) trained, all
    clients batched (``ClientTrainer.cohort_steps`` on the read-out)."""

    STREAM = 0xE7A1

    class Schedule(NamedTuple):
        """How long and how fast each client fine-tunes, and the seed of its example order."""
        epochs: int
        lr: float
        lr_decay: float
        batch_size: int
        seed: int

    def __init__(self, cohort_model, trainer, schedule: "ReadoutFineTune.Schedule",
                 train: ClientExamples, trainable=None, chunk: int = 64):
        self.cohort_model, self.trainer = cohort_model, trainer
        self.epochs, self.lr, self.decay = schedule.epochs, schedule.lr, schedule.lr_decay
        self.batch, self.seed = schedule.batch_size, schedule.seed
        self.train_sets, self.x, self.y = train.ids, train.x, train.y
        self.trainable, self.chunk = trainable, chunk
        self._steps = tf.function(self._tune, reduce_retracing=True, autograph=False)

    def _tune(self, params, feats, ys, ws, order, lr):
        from ..algorithms.client_work import CohortData, PhaseSpec, cohort_step_model
        spec = PhaseSpec(trainable=self.trainable)
        tuned, _, _ = self.trainer.cohort_steps(
            cohort_step_model(self.cohort_model.apply_readout, masked=False), params, params,
            CohortData(feats, ys, ws, order), lr, spec)
        return tuned

    def __call__(self, rnd, features, weights, heads, clients=None):
        """``heads``: {read-out tensor index: [N, ...]} in the evaluation's client order
        (``clients``: their ids, default 0..N-1); returns them fine-tuned."""
        from ..data.client_dataset import padded_order, padded_rows
        index = list(self.cohort_model.readout_tensors)
        n = len(heads[index[0]])
        clients = list(range(n)) if clients is None else clients
        lr = tf.constant(self.lr * self.decay ** rnd, tf.float32)
        out = {i: np.array(heads[i]) for i in index}
        for a in range(0, n, self.chunk):
            part = clients[a:a + self.chunk]
            sets = [self.train_sets[c] for c in part]
            flat = features(weights, self.x[np.concatenate(sets)])     # one pass per chunk
            feats = padded_rows(np.split(flat, np.cumsum([len(s) for s in sets])[:-1]),
                                np.float32)
            ys = padded_rows([self.y[ids] for ids in sets], np.int32)
            orders = []
            for c, ids in zip(part, sets):
                rng = np.random.default_rng([self.seed, rnd, c, self.STREAM])
                orders.append(np.concatenate([rng.permutation(len(ids))
                                              for _ in range(self.epochs)]))
            order, ws = padded_order(orders, self.batch)
            params = [tf.constant(out[i][a:a + self.chunk]) for i in index]
            tuned = self._steps(params, feats, ys, ws, order, lr)
            for i, t in zip(index, tuned):
                out[i][a:a + self.chunk] = t.numpy()
        return out
