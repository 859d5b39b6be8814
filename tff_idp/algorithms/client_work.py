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
    ``train_on_batches`` a stacked [steps, batch, ...] tensor (the fast runner's client
    loop). Both run the same :meth:`step`; ``train_cohort`` trains K clients at once with
    the same loss and :meth:`update` arithmetic."""

    def __init__(self, local_steps: Optional[int], optimizer: str = "sgd",
                 momentum: float = 0.0):
        if optimizer not in ("sgd", "adam"):
            raise ValueError(f"client_optimizer={optimizer!r} is not 'sgd' or 'adam'")
        self.local_steps, self.optimizer, self.momentum = local_steps, optimizer, momentum

    def _start(self, model, weights):
        for v, w in zip(model.trainable_variables, weights):
            v.assign(w)
        return (tf.constant(0.0), tf.constant(0.0),
                tuple(self.zero_slots(v) for v in model.trainable_variables))

    def zero_slots(self, v):
        """The optimizer's slots (a, b) for a variable like ``v``: momentum and second moment
        (Adam), momentum only (SGD with momentum), neither (plain SGD: scalar placeholders,
        no memory)."""
        a = tf.zeros_like(v) if self.optimizer == "adam" or self.momentum != 0 else tf.zeros([])
        b = tf.zeros_like(v) if self.optimizer == "adam" else tf.zeros([])
        return a, b

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
            step, a_new, b_new = self.update(g, a, b, count, lr)
            if w is None:
                v.assign_sub(step)
                new_slots.append((a_new, b_new))
            else:                                       # an all-padding step is a no-op
                v.assign_sub(active * step)
                new_slots.append((_masked(active, a_new, a), _masked(active, b_new, b)))
        if w is None:
            return loss_sum + loss, count + 1.0, tuple(new_slots)
        return loss_sum + active * loss, count + active, tuple(new_slots)

    def update(self, g, a, b, count, lr):
        """The optimizer's step from gradient ``g`` and slots (a, b) after ``count`` steps:
        returns (step to subtract, new a, new b). SGD with heavy-ball momentum (GDPFed Alg. 1
        lines 7-10: a <- mu a + g, step lr a) or Adam (Kingma & Ba 2015, Alg. 1, epsilon 1e-7
        as Keras). ``count`` may be a per-client [K, 1, ...] tensor (the cohort trainer)."""
        g = tf.convert_to_tensor(g)
        if self.optimizer == "sgd":
            if self.momentum == 0:                  # plain SGD: the slot stays unused
                return lr * g, a, b
            a_new = self.momentum * a + g
            return lr * a_new, a_new, b
        t = count + 1.0
        a_new = 0.9 * a + 0.1 * g
        b_new = 0.999 * b + 0.001 * tf.square(g)
        a_hat = a_new / (1.0 - tf.pow(0.9, t))
        b_hat = b_new / (1.0 - tf.pow(0.999, t))
        return lr * a_hat / (tf.sqrt(b_hat) + 1e-7), a_new, b_new

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

    def train_cohort(self, cohort_model, weights, xs, ys, lr, ws=None):
        """Every client of a cohort at once (``tff_idp.engine.cohort_model``): ``xs``
        [K, steps, batch, ...], ``ws`` [K, steps, batch] example weights or None. Each
        client starts from ``weights`` and takes the steps of :meth:`step` (same loss, masks
        and optimizer arithmetic) with its own weights and slots, as a batch dimension.
        Returns (deltas [K, ...] per weight tensor, mean loss per client [K])."""
        k = tf.shape(xs)[0]
        params = [tf.repeat(w[None], k, axis=0) for w in weights]
        slots = [self.zero_slots(p) for p in params]
        loss_sum, count = tf.zeros([k]), tf.zeros([k])
        for s in tf.range(tf.shape(xs)[1]):
            x, y = xs[:, s], ys[:, s]
            with tf.GradientTape() as tape:
                tape.watch(params)
                losses = tf.keras.losses.sparse_categorical_crossentropy(
                    y, cohort_model.apply(params, x), from_logits=True)       # [K, batch]
                if ws is None:
                    loss, active = tf.reduce_mean(losses, axis=1), tf.ones([k])
                else:
                    real = tf.reduce_sum(ws[:, s], axis=1)
                    loss = tf.reduce_sum(ws[:, s] * losses, axis=1) / tf.maximum(real, 1.0)
                    active = tf.cast(real > 0, tf.float32)
                total = tf.reduce_sum(loss)      # clients do not interact: d total / d params_k
            grads = tape.gradient(total, params)  # is client k's own gradient
            new_params, new_slots = [], []
            for p, g, (a, b) in zip(params, grads, slots):
                shape = tf.concat([[k], tf.ones([tf.rank(p) - 1], tf.int32)], 0)
                on, n = tf.reshape(active, shape), tf.reshape(count, shape)
                step, a_new, b_new = self.update(g, a, b, n, lr)
                if ws is None:
                    new_params.append(p - step)
                    new_slots.append((a_new, b_new))
                else:                             # an all-padding step is a no-op
                    new_params.append(p - on * step)
                    new_slots.append((_masked(on, a_new, a), _masked(on, b_new, b)))
            params, slots = new_params, new_slots
            loss_sum, count = loss_sum + active * loss, count + active
        deltas = [p - w[None] for p, w in zip(params, weights)]
        return deltas, loss_sum / tf.maximum(count, 1.0)


def _masked(active, new, old):
    """``new`` where the step was real (active > 0), else ``old`` (an unused slot as is)."""
    return old if new is old else tf.where(active > 0, new, old)


def make_client_train(local_steps: Optional[int], optimizer: str = "sgd",
                      momentum: float = 0.0):
    """``train(model, weights, dataset, lr) -> (delta, mean loss)`` (see :class:`ClientTrainer`)."""
    return ClientTrainer(local_steps, optimizer, momentum).train
