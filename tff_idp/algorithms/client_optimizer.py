"""The clients' optimizer as a pure function of explicit state (optax's and FedJAX's
``init``/``apply`` shape): ``init(params)`` gives the slots, ``apply(grads, slots, count,
lr)`` the steps to subtract and the new slots. Nothing lives in a variable, so one
``ClientOptimizer`` serves a client of the TFF process (scalar step count) and K clients of
the fast backend at once (a step count per client, ``[K]``, each weight tensor carrying the
client axis first).

- SGD with heavy-ball momentum (GDPFed Alg. 1 lines 7-10: a <- mu a + g, theta <- theta -
  lr a); ``momentum = 0`` is plain SGD and keeps no slot.
- Adam, beta1 0.9, beta2 0.999, epsilon 1e-7 (Keras' default value), with bias correction by
  the step count, in two forms that differ where a gradient is below about 1e-5: ``"adam"``
  as Kingma & Ba 2015 write Alg. 1 (epsilon added to the bias-corrected sqrt(v), as
  PyTorch), ``"adam_keras"`` in their Sec. 2 "efficient" form (alpha_t = lr sqrt(1 -
  beta2^t) / (1 - beta1^t), epsilon-hat added to the uncorrected sqrt(v)), which is how
  ``tf.keras.optimizers.Adam`` and TFF's ``build_adam`` step: paper 004's clients (the
  authors' code passes ``tf.keras.optimizers.Adam`` to TFF's FedAvg). Paper 004's clients
  start fresh moments every round.
"""
from __future__ import annotations

import dataclasses

import tensorflow as tf

# the values of the config key ``client_optimizer`` (tff_idp.config.CLIENT_OPTIMIZERS,
# which a test ties to this tuple)
OPTIMIZERS = ("sgd", "adam", "adam_keras")


def per_client(value, like):
    """``value`` (a scalar, or one entry per client ``[K]``) shaped to broadcast against
    ``like`` (``[K, ...]`` when ``value`` is per client)."""
    if value.shape.rank == 0:
        return value
    shape = tf.concat([tf.shape(value), tf.ones([tf.rank(like) - 1], tf.int32)], 0)
    return tf.reshape(value, shape)


@dataclasses.dataclass(frozen=True)
class ClientOptimizer:
    """``name`` "sgd" (with ``momentum``), "adam" or "adam_keras"; see the module
    docstring."""
    name: str = "sgd"
    momentum: float = 0.0

    def __post_init__(self):
        if self.name not in OPTIMIZERS:
            raise ValueError(f"client_optimizer={self.name!r} is not one of {OPTIMIZERS}")

    def init(self, params) -> tuple:
        """Zero slots (a, b) per tensor of ``params``: momentum and second moment (Adam),
        momentum only (SGD with momentum), neither (plain SGD: scalar placeholders)."""
        return tuple(self._zero_slots(p) for p in params)

    def _zero_slots(self, p):
        adam = self.name != "sgd"
        a = tf.zeros_like(p) if adam or self.momentum != 0 else tf.zeros([])
        b = tf.zeros_like(p) if adam else tf.zeros([])
        return a, b

    def apply(self, grads, slots, count, lr, params=None):
        """The steps to subtract for ``grads`` after ``count`` earlier steps (a scalar, or
        ``[K]`` per client), and the new slots: (list of steps, tuple of (a, b)). ``params``
        (the weights the steps leave) are not needed by these optimizers."""
        steps, new_slots = [], []
        for g, (a, b) in zip(grads, slots):
            step, a_new, b_new = self._update(tf.convert_to_tensor(g), a, b,
                                              per_client(count, g), lr)
            steps.append(step)
            new_slots.append((a_new, b_new))
        return steps, tuple(new_slots)

    def _update(self, g, a, b, count, lr):
        """One tensor's step: heavy-ball SGD (GDPFed Alg. 1 lines 7-10) or Adam (Kingma &
        Ba 2015, Alg. 1; ``adam_keras``: their Sec. 2 form with epsilon-hat, as Keras). An
        unused slot is returned as the same object."""
        if self.name == "sgd":
            if self.momentum == 0:
                return lr * g, a, b
            a_new = self.momentum * a + g
            return lr * a_new, a_new, b
        t = count + 1.0
        a_new = 0.9 * a + 0.1 * g
        b_new = 0.999 * b + 0.001 * tf.square(g)
        if self.name == "adam_keras":
            alpha = lr * tf.sqrt(1.0 - tf.pow(0.999, t)) / (1.0 - tf.pow(0.9, t))
            return alpha * a_new / (tf.sqrt(b_new) + 1e-7), a_new, b_new
        a_hat = a_new / (1.0 - tf.pow(0.9, t))
        b_hat = b_new / (1.0 - tf.pow(0.999, t))
        return lr * a_hat / (tf.sqrt(b_hat) + 1e-7), a_new, b_new


@dataclasses.dataclass(frozen=True)
class LearningOptimizer:
    """A ``tff.learning.optimizers.Optimizer`` (``initialize`` / ``next``, e.g. ``build_sgdm``
    or ``build_adam``) in :class:`ClientOptimizer`'s shape, so that the library's clients
    (``tff_idp.learning``) take the same ``ClientTrainer.step`` as the suite's: the slots are
    the optimizer's state, set to ``hparams`` (the process's client hyperparameters, its
    learning rate among them) at the start of a phase; the step is what its ``next`` takes
    off the weights. Its own learning rate is in ``hparams``: ``apply``'s ``lr`` is unused."""
    optimizer: object
    hparams: object

    def init(self, params):
        specs = tuple(tf.TensorSpec(p.shape, p.dtype) for p in params)
        return self.optimizer.set_hparams(self.optimizer.initialize(specs), self.hparams)

    def apply(self, grads, slots, count, lr, params):
        state, new = self.optimizer.next(slots, tuple(params), tuple(grads))
        return [p - n for p, n in zip(params, new)], state
