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

from typing import List, Sequence

import numpy as np
import tensorflow as tf


def evaluate(model, x, y, batch: int = 1000):
    """(mean cross-entropy, accuracy) of ``model`` on (x, y), in batches, through one traced
    forward pass per model (graph mode: a paper-scale run evaluates 10,000 images every
    round, which eager Keras calls made a third of the run)."""
    logits = _logits(model, x, batch)
    loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
        y, logits, from_logits=True))
    return float(loss), float(np.mean(np.argmax(logits, 1) == y))


def _logits(model, x, batch: int = 1000) -> np.ndarray:
    cast = np.int32 if np.issubdtype(x.dtype, np.integer) else np.float32
    forward = getattr(model, "_tff_idp_forward", None)
    if forward is None:
        forward = tf.function(lambda xb: model(xb, training=False), reduce_retracing=True)
        model._tff_idp_forward = forward
    return np.concatenate([forward(x[i:i + batch].astype(cast)).numpy()
                           for i in range(0, len(x), batch)])


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


class PersonalEvaluation:
    """Every client's model on its own test examples (module docstring).

    When the personal part is the last Dense layer (``split.head``), the features under it
    depend only on the shared body, so they are computed once per evaluation for the whole
    test set, and each client's head is applied to its own rows of them (a matrix product per
    client). Otherwise each client's full model is evaluated on its examples in turn."""

    def __init__(self, model, split, x_test, y_test, test_sets: Sequence[np.ndarray]):
        self.model, self.split = model, split
        self.x, self.y = x_test, y_test
        self.clients = [c for c, ids in enumerate(test_sets) if len(ids)]
        self.test_sets = [test_sets[c] for c in self.clients]
        self.features = None
        if split.head:
            last = model.layers[-1]
            if last.input is not model.inputs[0]:
                self.features = tf.keras.Model(model.inputs, last.input)
            self.activation = last.activation

    def __call__(self, weights, store) -> dict:
        out = self._averaged(weights, store)
        if self.split.head:
            return self._heads(weights, store) | out
        losses, accs = [], []
        for c, ids in zip(self.clients, self.test_sets):
            self.model.set_weights(self.split.combine([np.asarray(w) for w in weights],
                                                      [v[c] for v in store.values]))
            loss, acc = evaluate(self.model, self.x[ids], self.y[ids])
            losses.append(loss)
            accs.append(acc)
        return _spread(losses, accs) | out

    def _averaged(self, weights, store) -> dict:
        """The global model with every personal coordinate replaced by its mean over all
        clients, on the whole test set (002's second metric; one model where each client's
        is personal)."""
        self.model.set_weights(self.split.combine([np.asarray(w) for w in weights],
                                                  [v.mean(axis=0) for v in store.values]))
        loss, acc = evaluate(self.model, self.x, self.y)
        return {"averaged_model_test_loss": loss, "averaged_model_test_accuracy": acc}

    def _heads(self, weights, store) -> dict:
        self.model.set_weights(weights)
        feats = (_logits(self.features, self.x) if self.features is not None
                 else self.x.reshape(len(self.x), -1).astype(np.float32))
        kernel, bias = store.values[0], (store.values[1] if len(store.values) > 1 else None)
        losses, accs = [], []
        for c, ids in zip(self.clients, self.test_sets):
            logits = feats[ids] @ kernel[c] + (0.0 if bias is None else bias[c])
            if self.activation is not tf.keras.activations.linear:
                logits = self.activation(tf.constant(logits)).numpy()
            y = self.y[ids]
            losses.append(float(np.mean(tf.keras.losses.sparse_categorical_crossentropy(
                y, logits, from_logits=True))))
            accs.append(float(np.mean(np.argmax(logits, 1) == y)))
        return _spread(losses, accs)
