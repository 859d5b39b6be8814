"""Local training of one client, shared by the TFF process and the fast runner.

``make_client_train(...)`` returns ``train(model, weights, dataset, lr) -> (delta, mean loss)``:
set the model to the broadcast weights, run ``local_steps`` mini-batch steps (all batches of
``dataset`` when None) of SGD with heavy-ball momentum (GDPFed: Alg. 1 lines 7-10) or Adam
(paper 004; fresh moments every round), return theta_local - theta^t (line 11). Call it inside
a ``tf.function`` so that TF orders the variable writes and reads.
"""
from __future__ import annotations

from typing import Optional

import tensorflow as tf


def loss_fn(logits, labels):
    return tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
        labels, logits, from_logits=True))


class ClientTrainer:
    """Local training of one client; ``train`` reads a tf.data dataset (the TFF process),
    ``train_on_batches`` a stacked [steps, batch, ...] tensor (the fast runner). Both run the
    same :meth:`step`."""

    def __init__(self, local_steps: Optional[int], optimizer: str = "sgd",
                 momentum: float = 0.0):
        if optimizer not in ("sgd", "adam"):
            raise ValueError(f"client_optimizer={optimizer!r} is not 'sgd' or 'adam'")
        self.local_steps, self.optimizer, self.momentum = local_steps, optimizer, momentum

    def _start(self, model, weights):
        for v, w in zip(model.trainable_variables, weights):
            v.assign(w)
        return (tf.constant(0.0), tf.constant(0.0),
                tuple((tf.zeros_like(v), tf.zeros_like(v)) for v in model.trainable_variables))

    def step(self, model, state, x, y, lr, w=None):
        """One mini-batch step; ``state`` = (loss sum, step count, optimizer slots).
        ``w`` (fast runner): 1/0 weight per example of a padded batch; the loss is the mean
        over the real examples (a short last batch, as tf.data gives it) and an all-padding
        step changes nothing (no update, no optimizer step counted)."""
        loss_sum, count, slots = state
        variables = model.trainable_variables
        with tf.GradientTape() as tape:
            losses = tf.keras.losses.sparse_categorical_crossentropy(
                y, model(x, training=True), from_logits=True)
            if w is None:
                loss, active = tf.reduce_mean(losses), tf.constant(1.0)
            else:
                real = tf.reduce_sum(w)
                loss = tf.reduce_sum(w * losses) / tf.maximum(real, 1.0)
                active = tf.cast(real > 0, tf.float32)
        grads = tape.gradient(loss, variables)
        new_slots = []
        for v, g, (a, b) in zip(variables, grads, slots):
            if self.optimizer == "sgd":
                a_new = self.momentum * a + g           # SGD with heavy-ball momentum
                step, b_new = lr * a_new, b
            else:                                       # Adam (Kingma & Ba, Alg. 1)
                t = count + 1.0
                a_new = 0.9 * a + 0.1 * g
                b_new = 0.999 * b + 0.001 * tf.square(g)
                a_hat = a_new / (1.0 - tf.pow(0.9, t))
                b_hat = b_new / (1.0 - tf.pow(0.999, t))
                step = lr * a_hat / (tf.sqrt(b_hat) + 1e-7)
            if w is None:
                v.assign_sub(step)
                new_slots.append((a_new, b_new))
            else:                                       # an all-padding step is a no-op
                v.assign_sub(active * step)
                new_slots.append((tf.where(active > 0, a_new, a), tf.where(active > 0, b_new, b)))
        if w is None:
            return loss_sum + loss, count + 1.0, tuple(new_slots)
        return loss_sum + active * loss, count + active, tuple(new_slots)

    def _finish(self, model, weights, state):
        loss_sum, count, _ = state
        delta = [tf.identity(v) - w for v, w in zip(model.trainable_variables, weights)]
        return delta, loss_sum / tf.maximum(count, 1.0)

    def train(self, model, weights, dataset, lr):
        take = -1 if self.local_steps is None else self.local_steps
        state = dataset.take(take).reduce(
            self._start(model, weights), lambda st, b: self.step(model, st, b[0], b[1], lr))
        return self._finish(model, weights, state)

    def train_on_batches(self, model, weights, xs, ys, lr, ws=None):
        """``xs`` [steps, batch, ...]; ``ws`` [steps, batch] example weights (padding 0)."""
        state = self._start(model, weights)
        for s in tf.range(tf.shape(xs)[0]):
            state = self.step(model, state, xs[s], ys[s], lr, None if ws is None else ws[s])
        return self._finish(model, weights, state)


def make_client_train(local_steps: Optional[int], optimizer: str = "sgd",
                      momentum: float = 0.0):
    """``train(model, weights, dataset, lr) -> (delta, mean loss)`` (see :class:`ClientTrainer`)."""
    return ClientTrainer(local_steps, optimizer, momentum).train
