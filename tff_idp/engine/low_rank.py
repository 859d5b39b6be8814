"""Exact low-rank client updates of Dense kernels in the fast backend (issue 79).

With SGD and heavy-ball momentum mu (GDPFed Alg. 1 lines 7-10: a <- mu a + g,
theta <- theta - lr a) a client's Dense kernel after its first s local steps is

    W_k(s) = W0 - sum_{j < s} A_sj X_j^T D_j,

X_j the layer's input rows at step j, D_j the gradients of the client's batch loss with
respect to the layer's outputs (so X_j^T D_j is step j's kernel gradient) and
A_sj = lr * sum_{i=j}^{s-1} mu^(i-j) over the client's real steps (a step of padding alone
takes none): the shared matrix plus a change of rank at most (rows a step) x (steps).
So a chunk's clients train without any [i, o] matrix of their own:

- forward: x W_k = x W0 - ((x X^T) * A) D, the first product one matrix product over the
  whole cohort's rows (``cohort_model.FactoredKernel``);
- backward to the layer's inputs: TensorFlow's gradient of that expression,
  dy W0^T - ((dy D^T) * A) X;
- the kernel's gradient of step s is never formed: its rows (X_s, D_s) are written into
  the factors and the coefficients A move on (:func:`_next_coefficients`);
- the update Delta_k = X^T (-A * D) (:class:`DenseFactors`): its squared norm for the clip
  sum((X X^T) * (D D^T)) from [R, R] Gram matrices, a group's clipped sum one product over
  the group's stacked rows;
- where the query reads more than the group sums (PFA's public clients' updates, whose
  top directions the server computes), each client's Delta_k is formed whole once, at the
  end of its local training (:func:`materialised`), and aggregated as the per-client path
  aggregates it.

Where it is exact (:func:`factored_kernels`): the method's round is FedAvg's (one phase
training the whole model, nothing personal, no sparsified training), a phase of a fixed
number of steps, plain or momentum SGD without weight decay (a term in W itself), a chunk
trained as one cohort. Where it is cheaper (``fast_dense_updates = "auto"``): a kernel
whose rows of a round, R = steps x rows a step, satisfy 4 R (i + o) <= i o (the per-step
Gram products and the final norms cost O(R (i + o)) a row; the per-client path reads and
writes i o a client a step). ``"low_rank"`` takes every kernel where it is exact; ``"per_client"`` none. The
arithmetic is the per-client path's, summed in another order (float32 rounding:
tests/engine/test_low_rank.py).
"""
from __future__ import annotations

from typing import List, NamedTuple

import numpy as np
import tensorflow as tf

from ..algorithms.client_work import (StepModel, batch_loss, example_losses, loop_shapes,
                                      step_loop)
from .cohort_model import FactoredKernel

# the values of the config key ``fast_dense_updates`` (tff_idp.config.DENSE_UPDATES, which
# a test ties to this tuple)
DENSE_UPDATES = ("auto", "low_rank", "per_client")


class DenseFactors(NamedTuple):
    """K clients' updates of one Dense kernel, ``Delta_k = xs[k]^T ds[k]`` (xs [K, R, i],
    ds [K, R, o]: the layer's input rows of every local step, and their output gradients
    times the clients' coefficients -A)."""
    xs: tf.Tensor
    ds: tf.Tensor

    def sq_norms(self):
        """||Delta_k||_F^2 = tr((X X^T)(D D^T)) per client, [K]."""
        gx = tf.matmul(self.xs, self.xs, transpose_b=True)
        gd = tf.matmul(self.ds, self.ds, transpose_b=True)
        return tf.reduce_sum(gx * gd, axis=[1, 2])

    def group_sums(self, groups, scale):
        """sum_k groups[k, m] scale[k] Delta_k per group m, [M, i, o], for one-hot ``groups``
        [K, M] (M known when tracing) and per-client scales [K]: for each group one product
        of its clients' stacked rows, K R i o multiply-adds in all."""
        m = groups.shape[1]
        owner = tf.cast(tf.argmax(groups, axis=1), tf.int32)
        xs = tf.dynamic_partition(self.xs, owner, m)
        ds = tf.dynamic_partition(self.ds * scale[:, None, None], owner, m)
        i, o = tf.shape(self.xs)[2], tf.shape(self.ds)[2]
        return tf.stack([tf.matmul(tf.reshape(x, [-1, i]), tf.reshape(d, [-1, o]),
                                   transpose_a=True) for x, d in zip(xs, ds)])


def materialised(out, kernels, factors, weights):
    """What each client sends (``out``, a zero [K] in each factored kernel's place) with
    its factored kernels formed whole, Delta_k = xs[k]^T ds[k] ([K, i, o], i and o those of
    ``weights[idx]``): once, at the end of local training, for a query that reads more than
    the group sums (module docstring)."""
    out = list(out)
    for idx, f in zip(kernels, factors):
        out[idx] = tf.reshape(tf.matmul(f.xs, f.ds, transpose_a=True),
                              [-1] + weights[idx].shape.as_list())
    return out


def _rows_per_example(layer) -> int:
    """How many rows a Dense layer sees per example: 1 on [batch, i] inputs, the product of
    the middle axes on [batch, ..., i] (a read-out on every position of a sequence)."""
    return int(np.prod(layer.input.shape[1:-1]))


def factored_kernels(cfg, cohort_model, program, trainer) -> List[int]:
    """The indices (in ``model.trainable_variables`` order) of the Dense kernels the fast
    backend trains in the low-rank form: where it is exact and, with ``"auto"``, cheaper
    (module docstring); [] for none."""
    mode = cfg.fast_dense_updates
    if mode not in DENSE_UPDATES:
        raise ValueError(f"fast_dense_updates={mode!r} is not one of {DENSE_UPDATES}")
    if mode == "per_client" or cohort_model is None or not program.whole_model_fedavg:
        return []
    phase = program.phases[0]
    optimizer = trainer.optimizer
    if phase.epochs or getattr(optimizer, "name", None) != "sgd" or trainer.weight_decay:
        return []
    kernels = []
    for layer, idx in cohort_model.dense_kernels():
        kernel = cohort_model.model.trainable_variables[idx]
        i, o = kernel.shape
        rows = phase.steps * cfg.batch_size * _rows_per_example(layer)
        if mode == "low_rank" or 4 * rows * (i + o) <= i * o:
            kernels.append(idx)
    return kernels


def _next_coefficients(velocity, coef, step, steps, active, momentum, lr):
    """The factors' coefficients after a step (module docstring): on a client's real step
    its velocity over the gradients so far becomes mu v + e_s and A gains lr v (heavy-ball
    SGD, GDPFed Alg. 1 lines 8-9, on coefficients); a step of padding changes neither."""
    v_new = momentum * velocity + tf.one_hot(step, steps)[None, :]
    # 1/0 weights, not tf.where: TensorFlow 2.14's graph optimiser folds a where whose
    # [K, 1] condition is a constant (every step real: no padding weights) into empty
    # tensors
    on = tf.cast(active > 0, velocity.dtype)[:, None]
    return on * v_new + (1.0 - on) * velocity, coef + on * lr * v_new


def _factored(weights, kernels, fx, fd, coef):
    """The forward pass's kernels: :class:`FactoredKernel` of the factors so far (a step
    not taken yet has coefficient 0)."""
    out = {}
    for idx, x, d in zip(kernels, fx, fd):
        k, rows = tf.shape(x)[0], tf.shape(x)[2]
        scale = -tf.repeat(coef, rows, axis=1)[..., None]                  # [K, S*rows, 1]
        out[idx] = FactoredKernel(weights[idx], tf.reshape(x, [k, -1, tf.shape(x)[3]]),
                                  tf.reshape(d, [k, -1, tf.shape(d)[3]]) * scale)
    return out


def train_factored(trainer, cohort_model, program, weights, kernels, data, lr, spec):
    """One FedAvg phase of K clients from the broadcast ``weights`` (no client axis), the
    Dense kernels ``kernels`` in the low-rank form and the other tensors per client, every
    step :meth:`ClientTrainer.step` for those (the same optimizer, padding rule and loss).
    ``data`` = (xs, ys, ws) [K, steps, batch, ...]. Returns (what each client sends, per
    tensor [K, ...], a zero [K] in a factored kernel's place; :class:`DenseFactors` per
    factored kernel; mean loss per client [K])."""
    xs, ys, ws = data[:3]
    k, steps, batch = tf.shape(xs)[0], tf.shape(xs)[1], tf.shape(xs)[2]
    params = [tf.zeros([k]) if i in kernels else tf.repeat(w[None], k, axis=0)
              for i, w in enumerate(weights)]
    start = list(params)
    regular = [i for i in range(len(weights)) if i not in kernels]
    layers = dict((idx, layer) for layer, idx in cohort_model.dense_kernels())
    fx, fd = [], []
    for idx in kernels:
        rows = batch * _rows_per_example(layers[idx])
        i, o = weights[idx].shape
        fx.append(tf.zeros(tf.stack([k, steps, rows, i])))
        fd.append(tf.zeros(tf.stack([k, steps, rows, o])))
    velocity, coef = tf.zeros(tf.stack([k, steps])), tf.zeros(tf.stack([k, steps]))
    state = (tf.zeros([k]), tf.zeros([k]), trainer.optimizer.init(params))
    momentum = float(trainer.optimizer.momentum)

    def one_step(s, params, state, fx, fd, velocity, coef):
        x, y, w = xs[:, s], ys[:, s], None if ws is None else ws[:, s]
        fwd = list(params)
        for idx, kernel in _factored(weights, kernels, fx, fd, coef).items():
            fwd[idx] = kernel
        record = []
        with tf.GradientTape() as tape:
            tape.watch([params[i] for i in regular])

            def keep(rows, outputs):        # a kernel's inputs and outputs of this step
                tape.watch(outputs)
                record.append((rows, outputs))
                return outputs
            loss, active = batch_loss(example_losses(
                y, cohort_model.apply(fwd, x, record=keep), batch_dims=2), w)
            total = tf.reduce_sum(loss)
        got, outs = tape.gradient(total, ([params[i] for i in regular], [z for _, z in record]))
        grads = [tf.zeros([k]) if i in kernels else None for i in range(len(weights))]
        for i, g in zip(regular, got):
            grads[i] = g
        step_model = StepModel(lambda *_: (loss, active, grads), batched=True)
        params, state = trainer.step(step_model, params, state, (x, y, w), lr, spec, start)
        at = tf.one_hot(s, steps)[None, :, None, None]      # step s's rows into the factors
        fx = [f + at * h[:, None] for f, (h, _) in zip(fx, record)]
        fd = [f + at * g[:, None] for f, g in zip(fd, outs)]
        velocity, coef = _next_coefficients(velocity, coef, s, steps, active, momentum,
                                            lr * spec.lr_scale)
        return params, state, fx, fd, velocity, coef

    loop = (tf.constant(0), params, state, fx, fd, velocity, coef)
    # any number of clients (a chunk of one: a step's per-client factors have an unknown
    # first axis) and any length of the factors (a phase of one step: one-hot rows)
    _, params, state, fx, fd, velocity, coef = step_loop(
        steps, xs.shape[1], lambda s, *rest: (s + 1,) + one_step(s, *rest), loop,
        loop_shapes(loop, free=range(len(loop))))
    params = [tf.ensure_shape(p, [None] + t.shape[1:]) for p, t in zip(params, start)]
    out, _ = program.send(start, params, batched=True)
    factors = [DenseFactors(f.xs, f.ds) for f in _factored(weights, kernels, fx, fd,
                                                             coef).values()]
    return out, factors, state[0] / tf.maximum(state[1], 1.0)
