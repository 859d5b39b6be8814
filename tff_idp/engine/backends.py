"""The two ways to run a round, behind one interface: ``step(examples, infos, rnd) ->
metrics`` and ``weights``; ``examples`` holds each cohort client's (x, y) arrays in training
order (``loop.client_examples``), so both backends see the same batches.

``TFFBackend``: the TFF iterative process (reference semantics; TFF's C++ worker runs it on
the CPU, one client at a time). ``FastBackend``: the same client work
(``algorithms.client_work``) and the same clip/noise/top-k/reweighting arithmetic
(``GroupGaussianFactory.client_math`` / ``server_math``) inside one ``tf.function`` per
chunk of ``fast_chunk_size`` clients, on whatever device TensorFlow is given (a GPU when
there is one). When the model can be batched over clients (``cohort_model.CohortModel``:
every model of ``tff_idp.models``) a chunk's clients train together, their weights a batch
dimension (mode ``"cohort"``); otherwise one after another (mode ``"client-loop"``).
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from ..algorithms.client_work import ClientTrainer
from ..algorithms.process import build_group_dp_process
from .cohort_model import CohortModel


class UnsupportedByBackend(ValueError):
    """The method or setting is not implemented by this backend (never a silent fallback)."""


def _agg_metric(agg, key):
    if key in agg:
        return float(agg[key])
    if key == "clip" and "dp_query_metrics" in agg:
        return float(agg["dp_query_metrics"].get("clip", np.nan))
    return np.nan


class TFFBackend:
    name = "tff"
    mode = "tff"

    def __init__(self, cfg, plan, model_fn, w0, factory, element_spec):
        self.batch_size, self.epochs = cfg.batch_size, bool(cfg.local_epochs)
        self.process = build_group_dp_process(
            model_fn, w0, factory, element_spec, plan.num_aggregation_groups, cfg.local_lr,
            cfg.lr_decay, cfg.momentum, None if cfg.local_epochs else cfg.local_steps,
            cfg.client_optimizer, cfg.server_lr)
        self.state = self.process.initialize()

    @property
    def weights(self):
        return list(self.state["weights"])

    def snapshot(self):
        """Everything the next round depends on (model, optimizer and aggregator state), as
        a flat list of arrays (TFF's state holds TF-Privacy namedtuples that do not pickle)."""
        return [np.asarray(x) for x in tf.nest.flatten(self.state)]

    def restore(self, flat):
        self.state = tf.nest.pack_sequence_as(self.state, list(flat))

    def datasets(self, examples):
        """Each client's arrays as batches: full ``batch_size`` batches (``local_steps``;
        exactly that many examples are given) or, with ``local_epochs``, a short last one."""
        return [tf.data.Dataset.from_tensor_slices((x, y)).batch(
            self.batch_size, drop_remainder=not self.epochs) for x, y in examples]

    def step(self, examples, infos, rnd):
        self.state, metrics = self.process.next(self.state, self.datasets(examples), infos)
        agg = metrics.get("aggregator", {})
        return {"train_loss": float(metrics["train_loss"]),
                "clipped_fraction": _agg_metric(agg, "clipped_fraction"),
                "mean_update_norm": _agg_metric(agg, "mean_update_norm"),
                "adaptive_clip": _agg_metric(agg, "clip")}


class FastBackend:
    name = "fast"

    def __init__(self, cfg, plan, model_fn, w0, factory, element_spec):
        if plan.adaptive_clip and getattr(factory, "adaptive", None) is None:
            raise UnsupportedByBackend(f"methods={plan.method!r}: TFF's own adaptive-clipping "
                                       "factory (adaptive_clipping='tff') runs on "
                                       "backend='tff' only; adaptive_clipping='ours' runs on both")
        self.cfg, self.factory = cfg, factory
        self.m = plan.num_aggregation_groups
        self.steps, self.chunk = cfg.local_steps, cfg.fast_chunk_size
        self.model = model_fn()
        self.cohort_model = CohortModel(self.model) if CohortModel.supports(self.model) else None
        self.mode = "cohort" if self.cohort_model is not None else "client-loop"
        self.state = factory.initial_state_tensors()
        self._weights = [tf.constant(w, tf.float32) for w in w0]
        self.trainer = ClientTrainer(cfg.local_steps, cfg.client_optimizer, cfg.momentum)
        self._chunk_fn = tf.function(self._chunk_sums, reduce_retracing=True)

    @property
    def weights(self):
        return [w.numpy() for w in self._weights]

    def snapshot(self):
        return [w.numpy() for w in self._weights] + [
            np.asarray(x) for x in tf.nest.flatten(self.state)]

    def restore(self, flat):
        k = len(self._weights)
        self._weights = [tf.constant(w, tf.float32) for w in flat[:k]]
        self.state = tf.nest.pack_sequence_as(self.state, [tf.constant(x) for x in flat[k:]])

    def _aggregate(self, deltas, losses, groups, seeds, slots, state, counts):
        """Clip and noise K clients' updates (``client_math``, one implementation with the
        TFF backend), sum them per group (what secure aggregation reveals), sum their extra
        contributions and statistics."""
        noised, norm, clipped, bit = self.factory.client_math(deltas, groups, seeds, state,
                                                              counts)
        sums = [tf.tensordot(groups, n, axes=[[0], [0]]) for n in noised]      # [M, ...]
        extra = self.factory.client_extra(groups, seeds, slots, noised)
        stats = tf.stack([tf.reduce_sum(norm), tf.reduce_sum(clipped), tf.reduce_sum(losses),
                          tf.reduce_sum(bit)])
        return sums, extra, stats

    def _chunk_sums(self, weights, state, xs, ys, ws, groups, seeds, slots, counts, lr):
        """Per-group sums of the noised, clipped updates of a chunk of clients, the sum of
        their extra contributions (PFA's public rows) and summed statistics."""
        if self.cohort_model is not None:        # the chunk's clients train together
            deltas, losses = self.trainer.train_cohort(self.cohort_model, weights, xs, ys, lr, ws)
            return self._aggregate(deltas, losses, groups, seeds, slots, state, counts)
        sums = [tf.zeros([self.m] + w.shape.as_list()) for w in weights]
        extra = self.factory.client_extra_zeros(weights)
        stats = tf.zeros([4])
        for k in tf.range(tf.shape(xs)[0]):      # one client after another
            delta, loss = self.trainer.train_on_batches(self.model, weights, xs[k], ys[k], lr,
                                                        None if ws is None else ws[k])
            part, e, st = self._aggregate([d[None] for d in delta], loss[None], groups[k:k + 1],
                                          seeds[k:k + 1], slots[k:k + 1], state, counts)
            sums = [acc + p for acc, p in zip(sums, part)]
            extra, stats = extra + e, stats + st
        return sums, extra, stats

    def _padded_batches(self, examples):
        """Every client's batches as [clients, steps, batch, ...] arrays with example weights:
        ``local_steps`` full batches each (weights None: nothing is padded), or
        (``local_epochs``) each client's own number of batches, its short last batch and
        missing steps padded with weight 0 (FedJAX's for_each_client idea: one shape for the
        cohort, masks for the differences)."""
        bsz = self.cfg.batch_size
        if not self.cfg.local_epochs:            # every client: local_steps full batches
            return (np.stack([x.reshape((self.steps, bsz) + x.shape[1:]) for x, _ in examples]),
                    np.stack([y.reshape(self.steps, bsz) for _, y in examples]), None)
        steps = max(1, max(-(-len(y) // bsz) for _, y in examples))
        x0, y0 = examples[0]
        xs = np.zeros((len(examples), steps * bsz) + x0.shape[1:], x0.dtype)
        ys = np.zeros((len(examples), steps * bsz), y0.dtype)
        ws = np.zeros((len(examples), steps * bsz), np.float32)
        for c, (x, y) in enumerate(examples):
            xs[c, :len(y)], ys[c, :len(y)], ws[c, :len(y)] = x, y, 1.0
        return (xs.reshape((len(examples), steps, bsz) + x0.shape[1:]),
                ys.reshape(len(examples), steps, bsz), ws.reshape(len(examples), steps, bsz))

    def step(self, examples, infos, rnd):
        xs, ys, ws = self._padded_batches(examples)
        groups = np.stack([i["group"] for i in infos]).astype(np.float32)
        seeds = np.stack([i["seed"] for i in infos]).astype(np.int32)
        counts = tf.constant(groups.sum(0), tf.float32)
        lr = tf.constant(self.cfg.local_lr * self.cfg.lr_decay ** rnd, tf.float32)
        slots = np.array([i.get("slot", -1) for i in infos], np.int32)
        sums, extra, stats = None, None, tf.zeros([4])
        for a in range(0, len(examples), self.chunk):
            b = a + self.chunk
            part, e, s = self._chunk_fn(self._weights, self.state, xs[a:b], ys[a:b],
                                        None if ws is None else ws[a:b],
                                        groups[a:b], seeds[a:b], slots[a:b], counts, lr)
            sums = part if sums is None else [x + y for x, y in zip(sums, part)]
            extra = e if extra is None else extra + e
            stats += s
        update, _ = self.factory.server_math(sums, extra, self.state, counts)
        self._weights = [w + self.cfg.server_lr * u for w, u in zip(self._weights, update)]
        self.state = self.factory.state_update_math(self.state, stats[3])
        next_clip = float(self.state["clips"][0])      # reported like TFF's DP factory
        n = float(len(examples))
        norm, clipped, loss, _ = (stats / n).numpy()
        return {"train_loss": float(loss), "clipped_fraction": float(clipped),
                "mean_update_norm": float(norm),
                "adaptive_clip": next_clip if self.factory.adaptive is not None else np.nan}


BACKENDS = {"tff": TFFBackend, "fast": FastBackend}
