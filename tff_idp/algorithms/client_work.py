"""Local training, shared by the TFF processes (the suite's and the library's,
``tff_idp.learning.process``) and the fast runner.

A client starts from its start weights (the broadcast model, with its own personal part
where it has one), and runs the method's phases (:class:`ClientProgram`): in each, fresh
optimizer slots and a number of mini-batch steps (or every batch of its data) of SGD with
heavy-ball momentum (GDPFed: Alg. 1 lines 7-10) or Adam (paper 004; fresh moments every
round), with the gradients of parameters the phase does not train masked to zero. What it
sends is the method's ``client_output`` of (start, final) (FedAvg: theta_local - theta^t,
line 11). Every step of both backends is ``ClientTrainer.step``, a function of explicit weights and
optimizer state (``client_optimizer.ClientOptimizer``, or a ``tff.learning`` optimizer through
``client_optimizer.LearningOptimizer``); ``ClientTrainer.train_phases`` runs one client on
tf.data datasets (the TFF processes; call it inside a ``tf.function`` so that TF orders the
variable writes and reads), ``train_cohort_phases`` K clients at once with their
weights a batch dimension, and ``train_on_batches_phases`` one client of the fast runner's
client loop.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, List, NamedTuple, Optional, Sequence

import numpy as np
import tensorflow as tf

from . import sparse_training
from .client_optimizer import ClientOptimizer, per_client
from .round_parts import client_output, server_update


def example_losses(labels, logits, batch_dims: int = 1):
    """Cross-entropy of each example, [batch] (``batch_dims`` 2: [K, batch]); with a target
    at every position of a sequence (TFF's Shakespeare task) the mean over its positions, so
    that an example's weight (padding) covers the whole sequence and the mean over examples
    is the mean over every target."""
    losses = tf.keras.losses.sparse_categorical_crossentropy(
        tf.cast(labels, tf.int32), logits, from_logits=True)
    extra = list(range(batch_dims, losses.shape.rank))
    return tf.reduce_mean(losses, axis=extra) if extra else losses


@dataclasses.dataclass(frozen=True)
class ClientProgram:
    """A method's client work and server step as the backends run them (built by the engine
    from the method's plug-in, ``tff_idp.methods``): ``phases`` = [(train, steps, epochs)]
    (``methods.Phase``), the parameter ``split`` (``tff_idp.models.split``), what a client
    sends (``client_output(start, final, masks)``) and the server step
    (``server_update(weights, aggregate, server_lr, masks)``).

    A client starts from ``mask * broadcast + personal`` (the store keeps each client's
    personal coordinates, zero on the shared ones), trains phase after phase, sends
    ``client_output`` and keeps ``(1 - mask) * final``."""
    phases: Sequence
    split: object
    client_output: Callable
    server_update: Callable
    # DP-pFedDSU's sparsified training (``models.reparam.TopKReparam``) or None
    reparam: object = None
    # the config's local_lr: a phase with its own lr (``Phase.lr``) takes lr * phase.lr /
    # local_lr, so that both follow the round's decay
    local_lr: float = 1.0

    @property
    def masks(self) -> List[Optional[np.ndarray]]:
        return list(self.split.masks)

    @property
    def personal(self) -> List[int]:
        return self.split.personal_tensors

    def trainable(self, phase) -> Optional[List]:
        """Masks of a phase's gradients; None when it trains everything."""
        if phase.train == "all":
            return None
        return self.split.trainable(phase.train)

    @property
    def whole_model_fedavg(self) -> bool:
        """FedAvg's round (GDPFed Alg. 1 lines 6-11, 19): one phase training the whole model
        at the round's rate, nothing personal, no sparsified training, the model change
        sent and added to the server's model: what the library's ``LearningProcess`` runs
        (``tff_idp.learning.process``)."""
        if len(self.phases) != 1:
            return False
        ph = self.phases[0]
        return (ph.train == "all" and ph.lr is None and not ph.proximal and not ph.on_features
                and self.split.trivial and self.reparam is None
                and self.client_output is client_output and self.server_update is server_update)

    def step_phases(self) -> List["PhaseSteps"]:
        """The phases as a TFF client runs them (:class:`PhaseSteps`): that many batches of
        its dataset, or every batch in a phase of epochs (the runner repeats the data)."""
        return [PhaseSteps(None if ph.epochs else ph.steps, spec)
                for ph, spec in zip(self.phases, self.phase_specs())]

    def phase_specs(self) -> List["PhaseSpec"]:
        """What the trainers need of each phase (:class:`PhaseSpec`)."""
        return [PhaseSpec(
            self.trainable(ph), 1.0 if ph.lr is None else ph.lr / self.local_lr,
            self.reparam is not None and self.reparam.penalty > 0 and ph.train != "personal",
            float(ph.proximal)) for ph in self.phases]

    def send(self, start, final, batched: bool):
        """What leaves a client and where its noise may land: (``client_output``, support),
        the support per tensor a 0/1 mask or None (no mask beyond the split's). With
        sparsified training the output is (theta_tau - theta_0) * M_tau (paper 001 Eq. 11
        as reconstructed), M_tau the top-k masks of the final weights (``"local"``) or of
        the broadcast ones (``"global"``), and the noise lands on M_tau only (Eq. 13)."""
        out = self.client_output(start, final, self.masks)
        if self.reparam is None:
            return out, None
        source = final if self.reparam.source == "local" else start
        support = sparse_training.topk_masks(self.reparam, source, batched)
        return sparse_training.apply_masks(out, support), support

    def start(self, weights, personal):
        """Each client's start weights: the broadcast weights where shared, its stored
        values where personal (tensors may carry a leading client axis)."""
        return self.split.combine(weights, personal)

    def kept(self, final) -> List:
        """What a client keeps: its personal coordinates of ``final``."""
        return [final[i] * (1.0 - self.masks[i]) for i in self.personal]


class PhaseSpec(NamedTuple):
    """One phase as the trainers run it: per-tensor gradient masks (None: all trained), the
    factor on the round's learning rate, whether DP-pFedDSU's norm penalty is on (Eq. 10)
    and PMTL's proximal coefficient lambda (lambda ||theta - theta_0||^2; 0: none)."""
    trainable: Optional[list] = None
    lr_scale: float = 1.0
    penalize: bool = False
    proximal: float = 0.0


ALL = PhaseSpec()


@dataclasses.dataclass(frozen=True)
class LocalTraining:
    """How the sampled clients train and the server steps, every round. ``local_steps`` of
    mini-batch SGD (heavy-ball ``momentum``; GDPFed Sec. VI-A) or Adam (``optimizer="adam"``,
    paper 004: beta = (0.9, 0.999), eps = 1e-7, fresh moments every round); None: the whole
    client dataset (the runner makes it finite, e.g. E epochs). Learning rate in round t:
    ``local_lr * lr_decay ** t``; ``weight_decay`` adds (wd / 2) ||w||^2 to the loss; the
    server sets theta^{t+1} = theta^t + ``server_lr`` * aggregate."""
    local_lr: float = 0.1
    lr_decay: float = 0.99
    momentum: float = 0.0
    local_steps: Optional[int] = 5
    optimizer: str = "sgd"
    weight_decay: float = 0.0
    server_lr: float = 1.0

    @classmethod
    def of_config(cls, cfg) -> "LocalTraining":
        """A run config's local training (``local_epochs`` set: the whole client dataset)."""
        return cls(cfg.local_lr, cfg.lr_decay, cfg.momentum,
                   None if cfg.local_epochs else cfg.local_steps, cfg.client_optimizer,
                   cfg.weight_decay, cfg.server_lr)

    def learning_rate(self, rnd: int) -> float:
        """The clients' learning rate in round ``rnd``: local_lr * lr_decay ** rnd."""
        return self.local_lr * self.lr_decay ** rnd

    def trainer(self, reparam=None) -> "ClientTrainer":
        """The :class:`ClientTrainer` of this optimizer, momentum and weight decay."""
        return ClientTrainer(self.optimizer, self.momentum, self.weight_decay, reparam)


class CohortData(NamedTuple):
    """A local phase's examples for K clients: ``xs``, ``ys`` [K, steps, batch, ...], or with
    ``order`` [K, steps, batch] (positions) each client's rows [K, n, ...] that the batches
    gather; ``ws`` [K, steps, batch] 1/0 example weights (None: every example real)."""
    xs: object
    ys: object
    ws: object = None
    order: object = None


class PhaseSteps(NamedTuple):
    """A phase of a TFF client's work: ``steps`` batches of its dataset (None: every batch,
    a phase of epochs) and how they train (:class:`PhaseSpec`)."""
    steps: Optional[int]
    spec: "PhaseSpec"


class PhaseBatches(NamedTuple):
    """A phase of the fast backend's clients: their batches (:class:`CohortData`; for one
    client of the client loop, without the client axis), how they train
    (:class:`PhaseSpec`), and ``on_features``: the read-out alone on features computed
    once from ``data.xs`` (each client's examples, gathered by ``data.order``)."""
    data: CohortData
    spec: "PhaseSpec"
    on_features: bool = False


class StepModel(NamedTuple):
    """How :meth:`ClientTrainer.step` reaches a model: ``grads(fwd, x, y, w, trainable)``
    gives (batch loss, 1/0 whether the batch held a real example, d loss / d fwd) at the
    weights ``fwd``; ``batched``: tensors carry a leading client axis (K clients at once);
    ``masked``: the forward pass runs on sparsified weights when the trainer has a
    reparametrisation (not for a read-out trained on features computed once)."""
    grads: Callable
    batched: bool
    masked: bool = True


def _keras_call(model, x, training):
    return model(x, training=training)


def _forward_pass(model, x, training):
    return model.forward_pass(x, training=training)


# The suite traces its own training code as written (every tf.function with
# autograph=False: no tensor decides a branch in it; docs/backends.md). A model is the
# user's code and may branch on tensors, as it may under a stock TFF client's tf.function:
# these two calls are converted by AutoGraph, so that Keras converts a subclassed model's
# ``call`` and AutoGraph a ``tff.learning`` model's plain ``forward_pass``, as before.
_keras_call = tf.autograph.to_graph(_keras_call)
_forward_pass = tf.autograph.to_graph(_forward_pass)


def keras_step_model(model) -> StepModel:
    """One client through a Keras model: its variables take the weights ``fwd`` and the
    gradient is taken with respect to them (inside a ``tf.function``, TF orders the writes
    before the reads)."""
    variables = model.trainable_variables

    def grads(fwd, x, y, w, trainable):
        for v, p in zip(variables, fwd):
            v.assign(p)
        with tf.GradientTape() as tape:
            loss, active = batch_loss(example_losses(y, _keras_call(model, x, True)), w)
        return loss, active, _gradients(tape, loss, variables, trainable)
    return StepModel(grads, batched=False)


def learning_step_model(model) -> StepModel:
    """One client through a ``tff.learning`` model (``VariableModel``): its trainable
    variables take the weights ``fwd``; ``x`` is the batch its ``forward_pass`` takes (the
    labels inside it), ``y`` and ``w`` unused; the loss is the model's own."""
    variables = model.trainable_variables

    def grads(fwd, x, y, w, trainable):
        for v, p in zip(variables, fwd):
            v.assign(p)
        with tf.GradientTape() as tape:
            loss = _forward_pass(model, x, True).loss
        return loss, tf.ones_like(loss), _gradients(tape, loss, variables, trainable)
    return StepModel(grads, batched=False)


def cohort_step_model(apply, masked: bool = True) -> StepModel:
    """K clients at once through ``apply(params, x)`` (``CohortModel.apply``, or its
    read-out alone): the gradient of the summed per-client losses is each client's own,
    since clients do not interact."""
    def grads(fwd, x, y, w, trainable):
        with tf.GradientTape() as tape:
            tape.watch(fwd)
            loss, active = batch_loss(example_losses(y, apply(fwd, x), batch_dims=2), w)
            total = tf.reduce_sum(loss)
        return loss, active, _gradients(tape, total, fwd, trainable)
    return StepModel(grads, batched=True, masked=masked)


def batch_loss(losses, w=None):
    """A batch's loss from its examples' (last axis): the mean, or with 1/0 weights ``w``
    (a padded batch) the mean over the real examples, as tf.data's short last batch gives
    it; and 1/0 whether any example was real (per client when batched)."""
    if w is None:
        loss = tf.reduce_mean(losses, axis=-1)
        return loss, tf.ones_like(loss)
    real = tf.reduce_sum(w, axis=-1)
    loss = tf.reduce_sum(w * losses, axis=-1) / tf.maximum(real, 1.0)
    return loss, tf.cast(real > 0, tf.float32)


class ClientTrainer:
    """Local training. Every step of every backend is :meth:`step`, a function of explicit
    weights and optimizer state (FedJAX's ``client_step``); how it reaches the model is a
    :class:`StepModel`: ``train_phases`` (the TFF process, on tf.data datasets) and
    ``train_on_batches_phases`` (the fast backend's client loop, on stacked [steps, batch,
    ...] tensors) through a Keras model, ``train_cohort_phases`` (K clients at once) through
    ``CohortModel``."""

    def __init__(self, optimizer="sgd", momentum: float = 0.0,
                 weight_decay: float = 0.0, reparam=None):
        """``optimizer``: "sgd" (with ``momentum``) or "adam" (:class:`ClientOptimizer`), or
        an optimizer of that shape (``client_optimizer.LearningOptimizer``: the library's
        TFF optimizers)."""
        self.optimizer = ClientOptimizer(optimizer, momentum) if isinstance(optimizer, str) \
            else optimizer
        self.weight_decay, self.reparam = weight_decay, reparam

    def _forward_masks(self, params, start, batched):
        """The top-k masks of this step's forward pass (paper 001 Eqs. 6-7): from the
        current weights (``"local"``: recomputed every step) or the round's start weights
        (``"global"``); None without sparsified training."""
        if self.reparam is None:
            return None
        source = params if self.reparam.source == "local" else start
        return sparse_training.topk_masks(self.reparam, source, batched)

    def _extra_terms(self, params, start, masks, grads, spec, batched):
        """The gradient and loss terms beyond the data loss, in PyTorch's order (penalties,
        then weight decay g + wd theta, then the phase's trainable masks): DP-pFedDSU's norm
        penalty (Eq. 10), PMTL's proximal term, weight decay. Returns (grads, extra loss)."""
        extra = 0.0
        if spec.penalize:
            value, pen = sparse_training.penalty(self.reparam, params, start, masks, batched)
            grads = [g + q for g, q in zip(grads, pen)]
            extra = extra + value
        if spec.proximal:
            lam = spec.proximal
            diffs = [p - s for p, s in zip(params, start)]
            grads = [g + 2.0 * lam * d for g, d in zip(grads, diffs)]
            extra = extra + lam * sparse_training.sum_squares(diffs, batched)
        if self.weight_decay:
            grads = [g + self.weight_decay * p for g, p in zip(grads, params)]
        return _frozen(grads, spec.trainable), extra

    def fresh(self, params):
        """One client's state at the start of a phase: (loss sum, step count, slots) with
        no loss, no steps and zero slots (a new optimizer)."""
        return tf.constant(0.0), tf.constant(0.0), self.optimizer.init(params)

    def step(self, model: StepModel, params, state, batch, lr, spec=None, start=None):
        """One mini-batch step of one client or K at once: returns (new weights, new
        ``state``), ``state`` = (loss sum, step count, optimizer slots), ``batch`` = (x, y,
        w), ``w`` 1/0 per example of a padded batch or None. The loss is the mean over the
        real examples; an all-padding step changes nothing (no update, no optimizer step
        counted). ``spec`` (:class:`PhaseSpec`): the gradient masks (a phase that trains
        part of the model leaves the rest exactly where it was), the lr factor and the
        penalty terms, which need the round's ``start`` weights. With sparsified training
        the forward pass runs on theta * M and d/d theta L(theta * M) = M * L'."""
        spec = ALL if spec is None else spec
        loss_sum, count, slots = state
        x, y, w = batch
        masks = self._forward_masks(params, start, model.batched) if model.masked else None
        fwd = params if masks is None else sparse_training.apply_masks(params, masks)
        loss, active, grads = model.grads(fwd, x, y, w, spec.trainable)
        if masks is not None:
            grads = [g if m is None else g * m for g, m in zip(grads, masks)]
        grads, extra = self._extra_terms(params, start, masks, grads, spec, model.batched)
        loss = loss + extra
        steps, new_slots = self.optimizer.apply(grads, slots, count, lr * spec.lr_scale,
                                                params)
        if w is None:
            return ([p - s for p, s in zip(params, steps)],
                    (loss_sum + loss, count + 1.0, new_slots))
        new_params, kept_slots = [], []                 # an all-padding step is a no-op
        for p, s, (a, b), (a_new, b_new) in zip(params, steps, slots, new_slots):
            on = per_client(active, p)
            new_params.append(p - on * s)
            kept_slots.append((_masked(on, a_new, a), _masked(on, b_new, b)))
        return new_params, (loss_sum + active * loss, count + active, tuple(kept_slots))

    def train_phases(self, model: StepModel, start, datasets, lr, phases: List[PhaseSteps]):
        """A TFF client's work in phases through ``model`` (:func:`keras_step_model`, or
        :func:`learning_step_model` for a ``tff.learning`` model): from ``start`` (its own
        start weights), for each phase (``datasets[i]`` of (x, y) elements, ``phases[i]``:
        :class:`PhaseSteps`) fresh optimizer slots and that many steps. Returns (final
        weights, mean loss over all steps)."""
        params, loss_sum, count = tuple(start), tf.constant(0.0), tf.constant(0.0)
        for dataset, (steps, spec) in zip(datasets, phases):
            def one_step(state, batch, spec=spec):   # tf.data would stack a list: tuples
                new, st = self.step(model, state[0], state[1], (batch[0], batch[1], None),
                                    lr, spec, start)
                return tuple(new), st
            params, (phase_loss, phase_count, _) = dataset.take(
                -1 if steps is None else steps).reduce((params, self.fresh(params)), one_step)
            loss_sum, count = loss_sum + phase_loss, count + phase_count
        return list(params), loss_sum / tf.maximum(count, 1.0)

    def train_on_batches_phases(self, model, start, phases: List[PhaseBatches], lr):
        """One client of the fast runner's client loop, in phases (:class:`PhaseBatches`
        whose data are xs [steps, batch, ...], ys, ws or None). Returns (final weights, mean
        loss over all steps)."""
        keras = keras_step_model(model)
        params, loss_sum, count = list(start), tf.constant(0.0), tf.constant(0.0)
        for (xs, ys, ws, _), spec, _ in phases:
            def one_step(s, params, state, xs=xs, ys=ys, ws=ws, spec=spec):
                params, state = self.step(keras, params, state,
                                          (xs[s], ys[s], None if ws is None else ws[s]), lr,
                                          spec, start)
                return s + 1, list(params), state
            steps = tf.shape(xs)[0]
            _, params, state = tf.while_loop(
                lambda s, *_: s < steps, one_step,
                (tf.constant(0), list(params), self.fresh(params)))
            loss_sum, count = loss_sum + state[0], count + state[1]
        return list(params), loss_sum / tf.maximum(count, 1.0)

    def train_on_batches(self, model, weights, xs, ys, lr, ws=None):
        """One client from ``weights`` through one phase training everything: ``xs``
        [steps, batch, ...]; ``ws`` [steps, batch] example weights (padding 0). Returns
        (delta, mean loss)."""
        final, loss = self.train_on_batches_phases(
            model, weights, [PhaseBatches(CohortData(xs, ys, ws), ALL)], lr)
        return [f - w for f, w in zip(final, weights)], loss

    def train_cohort(self, cohort_model, weights, xs, ys, lr, ws=None):
        """Every client of a cohort at once (``tff_idp.engine.cohort_model``): ``xs``
        [K, steps, batch, ...], ``ws`` [K, steps, batch] example weights or None. Each
        client starts from ``weights`` and takes the steps of :meth:`step` with its own
        weights and slots, as a batch dimension. Returns (deltas [K, ...] per weight tensor,
        mean loss per client [K])."""
        k = tf.shape(xs)[0]
        params = [tf.repeat(w[None], k, axis=0) for w in weights]
        final, loss = self.train_cohort_phases(
            cohort_model, params, [PhaseBatches(CohortData(xs, ys, ws), ALL)], lr)
        return [p - w[None] for p, w in zip(final, weights)], loss

    def train_cohort_phases(self, cohort_model, params, phases: List[PhaseBatches], lr,
                            readout=None):
        """:meth:`train_cohort` from per-client start weights ``params`` ([K, ...] per
        tensor: the broadcast shared part and each client's personal part) through
        ``phases`` (:class:`PhaseBatches`), fresh optimizer slots in each. Without a
        ``data.order``, ``data.xs`` [K, steps, batch, ...] are the batches. With one,
        ``data.xs`` [K, n, ...] are each client's examples once, ``order`` [K, steps, batch]
        indices into them and ``ws`` their weights (each client's examples held once for
        all its epochs); ``on_features`` then trains the read-out alone on features
        computed once (``readout``: the read-out's tensor indices): the same steps as on the
        examples themselves, the layers below being frozen. Returns (final weights [K, ...]
        per tensor, mean loss per client over all steps)."""
        start = list(params)
        k = tf.shape(params[0])[0]
        loss_sum, count = tf.zeros([k]), tf.zeros([k])
        for data, spec, on_features in phases:
            if on_features:                      # on features computed once
                params, phase_loss, phase_count = self._readout_steps(
                    cohort_model, params, start, data, lr, spec, readout)
            else:
                params, phase_loss, phase_count = self.cohort_steps(
                    cohort_step_model(cohort_model.apply), params, start, data, lr, spec)
            loss_sum, count = loss_sum + phase_loss, count + phase_count
        return params, loss_sum / tf.maximum(count, 1.0)

    def _readout_steps(self, cohort_model, params, start, data, lr, spec, readout):
        """A phase that trains the read-out alone, on each client's features computed once
        (with the forward pass's masks under sparsified training): the read-out's tensors go
        through :meth:`cohort_steps` with the features as inputs, batches gathered by
        ``order``."""
        masks = self._forward_masks(params, start, batched=True)
        body = params if masks is None else sparse_training.apply_masks(params, masks)
        feats = cohort_model.features(body, data.xs)                   # [K, n, f]
        head = [params[i] for i in readout]
        head_spec = spec._replace(
            trainable=None if spec.trainable is None else [spec.trainable[i] for i in readout])
        if spec.penalize or spec.proximal:
            raise ValueError("a read-out phase has no penalty terms")
        trained, loss_sum, count = self.cohort_steps(
            cohort_step_model(cohort_model.apply_readout, masked=False), head,
            [start[i] for i in readout], data._replace(xs=feats), lr, head_spec)
        params = list(params)
        for i, t in zip(readout, trained):
            params[i] = t
        return params, loss_sum, count

    def cohort_steps(self, model: StepModel, params, start, data, lr, spec):
        """The steps of one phase for K clients (:meth:`train_cohort`) on ``data``
        (:class:`CohortData`) with fresh optimizer slots and step count, each a
        :meth:`step`. With ``data.order`` the batches are ``data.xs`` rows gathered by it
        (e.g. features computed once, ``cohort_step_model(apply_readout, masked=False)``).
        Returns (params, loss sum [K], steps taken [K])."""
        xs, ys, ws, order = data
        k = tf.shape(params[0])[0]
        steps = tf.shape(xs)[1] if order is None else tf.shape(order)[1]

        def one_step(s, params, loss_sum, count, slots):
            # a padded step's columns past every client's last example are cut off
            w, width = None, None
            if ws is not None:
                width = live_width(ws[:, s])
                w = ws[:, s, :width]
            if order is None:
                x, y = xs[:, s, :width], ys[:, s, :width]
            else:
                x = tf.gather(xs, order[:, s, :width], batch_dims=1)
                y = tf.gather(ys, order[:, s, :width], batch_dims=1)
            params, (loss_sum, count, slots) = self.step(
                model, params, (loss_sum, count, slots), (x, y, w), lr, spec, start)
            return s + 1, list(params), loss_sum, count, slots

        loop = (tf.constant(0), list(params), tf.zeros([k]), tf.zeros([k]),
                self.optimizer.init(params))
        _, params, loss_sum, count, _ = step_loop(
            steps, (xs if order is None else order).shape[1], one_step, loop,
            loop_shapes(loop, free=(2, 3)))          # a chunk of one: [K] of unknown K
        return params, loss_sum, count


# local steps written out rather than looped, where their number is known when the round
# is traced and at most this (step_loop)
UNROLLED_STEPS = 8


def step_loop(steps, known, body, loop, shape_invariants):
    """``tf.while_loop(lambda s, *_: s < steps, body, loop, shape_invariants)``, ``loop[0]``
    the step counter from 0, written out step by step instead (the same operations, one
    copy a step) where the number of steps is ``known`` when traced (a static dimension)
    and at most :data:`UNROLLED_STEPS`. Why: TensorFlow runs a while loop as a graph with
    a cycle, and its oneDNN layout pass (x86 CPUs) walks such a graph in an order that
    differs from process to process; where it meets a MaxPoolGrad before the MaxPool that
    feeds it, the gradient stays on TensorFlow's own kernel, 0.4-0.6 s a round slower on the
    FMNIST CNN in some processes (docs/backends.md, "Where issue 79 stops"). A graph
    without a cycle is walked in topological order."""
    if known is None or known > UNROLLED_STEPS:
        return tf.while_loop(lambda s, *_: s < steps, body, loop,
                             shape_invariants=shape_invariants)
    for _ in range(int(known)):
        loop = body(*loop)
    return loop


def loop_shapes(loop, free=()):
    """``tf.while_loop``'s shape invariants for the loop variables ``loop``: each keeps its
    shape, but those at the top-level positions ``free``, whose every dimension may vary
    (their rank kept)."""
    return tuple(tf.nest.map_structure(
        lambda t: tf.TensorShape([None] * t.shape.rank) if i in free else t.shape, v)
        for i, v in enumerate(loop))


def live_width(w):
    """The columns of a padded step's weights ``w`` [K, batch] up to the last one that any
    client uses (at least 1): the rest are padding in every client (a phase of epochs whose
    last batch is short, ``data.client_dataset.cohort_batches``), whose examples carry weight
    0 and so change neither the loss nor a gradient; cutting them off saves their forward and
    backward passes (Table I of paper 004: 270 examples a client in 3 steps of 128, 384
    rows computed for 270 without the cut). The sums over the batch then run over fewer
    exact zeros: the same numbers up to float32 summation order."""
    used = tf.reduce_any(tf.not_equal(w, 0.0), axis=0)
    cols = tf.range(1, tf.shape(w)[1] + 1)
    return tf.maximum(tf.reduce_max(tf.where(used, cols, 0)), 1)


def _frozen_whole(t) -> bool:
    """A trainable mask that freezes its whole tensor (a numpy constant of zeros)."""
    return t is not None and not isinstance(t, tf.Tensor) and not np.any(t)


def _gradients(tape, loss, variables, trainable):
    """d loss / d variables, zeros for tensors the phase freezes whole, without computing
    them: a head phase then back-propagates through the head only, not the frozen body (the
    same numbers as masking them afterwards, which ``_frozen`` still does)."""
    if trainable is None:
        return tape.gradient(loss, variables)
    live = [i for i, t in enumerate(trainable) if not _frozen_whole(t)]
    got = dict(zip(live, tape.gradient(loss, [variables[i] for i in live])))
    return [got[i] if i in got else tf.zeros_like(v) for i, v in enumerate(variables)]


def _frozen(grads, trainable):
    """Gradients times each variable's trainable mask (None: all trainable, left as is)."""
    if trainable is None:
        return grads
    return [g if t is None else g * t for g, t in zip(grads, trainable)]


def _masked(active, new, old):
    """``new`` where the step was real (active > 0), else ``old`` (an unused slot as is)."""
    return old if new is old else tf.where(active > 0, new, old)
