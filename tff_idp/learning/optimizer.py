"""The suite's client optimizers as ``tff.learning`` optimizers.

``client_optimizer("sgd", learning_rate, momentum=, weight_decay=)``, ``("adam", ...)`` or
``("adam_keras", ...)`` is a ``tff.learning.optimizers.Optimizer`` whose steps are the suite's
own (``tff_idp.algorithms.client_optimizer.ClientOptimizer``): SGD with heavy-ball momentum
(GDPFed Alg. 1 lines 7-10: a <- mu a + g, theta <- theta - lr a), Adam as Kingma & Ba's
Algorithm 1 writes it, epsilon added to the bias-corrected sqrt(v), and Adam in Keras' form
(epsilon added before the correction, as TFF's ``build_adam``; the two differ where a
gradient is below about 1e-5); weight decay adds wd theta to the gradient (PyTorch's
``weight_decay``). The library's process takes it like
any TFF optimizer, and the TFF backend gives it to the library's process, so a run's clients
step as the fast backend's do.
"""
from __future__ import annotations

import collections
import numbers

import tensorflow as tf

from ..algorithms.client_optimizer import ClientOptimizer
from ..key_ranges import LEARNING_RATE, Range
from ..runtime import import_tff

tff = import_tff()


class SuiteOptimizer(tff.learning.optimizers.Optimizer):
    """See the module docstring. State: the learning rate (the one hyperparameter), the
    step count (Adam's bias correction) and the slots (momentum; Adam's second moment)."""

    def __init__(self, learning_rate: float, name: str = "sgd", momentum: float = 0.0,
                 weight_decay: float = 0.0):
        for arg, value, rng in (("learning_rate", learning_rate, LEARNING_RATE),
                                ("momentum", momentum, Range(0, 1, high_open=True)),
                                ("weight_decay", weight_decay, Range(0, 1e3))):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
                    not rng.holds(value):
                raise ValueError(f"{arg}={value!r}: {rng.rule()}")
        self._steps = ClientOptimizer(name, momentum)      # refuses an unknown name
        self._lr, self._wd = float(learning_rate), float(weight_decay)

    def initialize(self, specs):
        zeros = [tf.zeros(s.shape, s.dtype) for s in tf.nest.flatten(specs)]
        return collections.OrderedDict(learning_rate=self._lr, count=0.0,
                                       slots=self._steps.init(zeros))

    def next(self, state, weights, gradients):
        flat_w, flat_g = tf.nest.flatten(weights), tf.nest.flatten(gradients)
        if self._wd:
            flat_g = [g + self._wd * w for g, w in zip(flat_g, flat_w)]
        steps, slots = self._steps.apply(flat_g, state["slots"], state["count"],
                                         state["learning_rate"])
        new_state = collections.OrderedDict(learning_rate=state["learning_rate"],
                                            count=state["count"] + 1.0, slots=slots)
        return new_state, tf.nest.pack_sequence_as(
            weights, [w - s for w, s in zip(flat_w, steps)])

    def get_hparams(self, state):
        return collections.OrderedDict(learning_rate=state["learning_rate"])

    def set_hparams(self, state, hparams):
        return collections.OrderedDict(state, learning_rate=hparams["learning_rate"])


def client_optimizer(name: str = "sgd", learning_rate: float = 0.1, momentum: float = 0.0,
                     weight_decay: float = 0.0) -> SuiteOptimizer:
    """The suite's client optimizer ``name`` ("sgd", "adam", "adam_keras") as a ``tff.learning``
    optimizer (module docstring)."""
    return SuiteOptimizer(learning_rate, name, momentum, weight_decay)


__all__ = ["SuiteOptimizer", "client_optimizer"]
