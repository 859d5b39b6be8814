"""The two ways to run a round, behind one interface: ``step(datasets, infos, lr) -> metrics``
and ``weights``.

``TFFBackend``: the TFF iterative process (reference semantics; TFF's C++ worker runs it on
the CPU, one client at a time). ``FastBackend``: the same client work
(``algorithms.client_work``) and the same clip/noise/top-k/reweighting arithmetic
(``GroupGaussianFactory.client_math`` / ``server_math``) inside one ``tf.function`` over the
whole cohort, on whatever device TensorFlow is given (a GPU when there is one). The cohort
is processed in chunks of ``chunk_size`` clients to bound memory.
"""
from __future__ import annotations

import collections

import numpy as np
import tensorflow as tf

from ..algorithms.client_work import ClientTrainer
from ..algorithms.process import build_group_dp_process


ClientInfo = collections.namedtuple("ClientInfo", ["group", "seed", "slot"])


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

    def __init__(self, cfg, plan, model_fn, w0, factory, element_spec):
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

    def step(self, datasets, infos, rnd):
        self.state, metrics = self.process.next(self.state, datasets, infos)
        agg = metrics.get("aggregator", {})
        return {"train_loss": float(metrics["train_loss"]),
                "clipped_fraction": _agg_metric(agg, "clipped_fraction"),
                "mean_update_norm": _agg_metric(agg, "mean_update_norm"),
                "adaptive_clip": _agg_metric(agg, "clip")}


class FastBackend:
    name = "fast"

    def __init__(self, cfg, plan, model_fn, w0, factory, element_spec, chunk_size=64):
        if plan.adaptive_clip and getattr(factory, "adaptive", None) is None:
            raise UnsupportedByBackend(f"methods={plan.method!r}: TFF's own adaptive-clipping "
                                       "factory (adaptive_clipping='tff') runs on "
                                       "backend='tff' only; adaptive_clipping='ours' runs on both")
        self.cfg, self.factory = cfg, factory
        self.m = plan.num_aggregation_groups
        self.steps, self.chunk = cfg.local_steps, chunk_size
        self.model = model_fn()
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

    def _chunk_sums(self, weights, state, xs, ys, ws, groups, seeds, slots, counts, lr):
        """Per-group sums of the noised, clipped updates of a chunk of clients, the sum of
        their extra contributions (PFA's public rows) and summed statistics."""
        m = self.m
        sums = [tf.zeros([m] + w.shape.as_list()) for w in weights]
        extra = self.factory.client_extra_zeros(weights)
        stats = tf.zeros([4])
        for k in tf.range(tf.shape(xs)[0]):
            delta, loss = self.trainer.train_on_batches(self.model, weights, xs[k], ys[k], lr,
                                                        None if ws is None else ws[k])
            noised, norm, clipped, bit = self.factory.client_math(delta, groups[k], seeds[k],
                                                                  state, counts)
            sums = [acc + tf.reshape(groups[k], [m] + [1] * len(n.shape)) * n[None]
                    for acc, n in zip(sums, noised)]
            extra = extra + self.factory._client_extra(
                ClientInfo(groups[k], seeds[k], slots[k]), noised)
            stats = stats + tf.stack([norm, clipped, loss, bit])
        return sums, extra, stats

    def _padded_batches(self, datasets):
        """Every client's batches as [clients, steps, batch, ...] arrays with example weights:
        ``local_steps`` full batches each (weights None: nothing is padded), or
        (``local_epochs``) each client's own number of
        batches, its short last batch and missing steps padded with weight 0 (FedJAX's
        for_each_client idea: one shape for the cohort, masks for the differences)."""
        if not self.cfg.local_epochs:            # every client: local_steps full batches
            batches = [list(ds.take(self.steps).as_numpy_iterator()) for ds in datasets]
            return (np.stack([np.stack([b[0] for b in cb]) for cb in batches]),
                    np.stack([np.stack([b[1] for b in cb]) for cb in batches]), None)
        batches = [list(ds.as_numpy_iterator()) for ds in datasets]
        steps = max(1, max(len(b) for b in batches))
        bsz = self.cfg.batch_size
        x0, y0 = next((b[0] for b in batches if b), (None, None))
        xs = np.zeros((len(batches), steps, bsz) + x0.shape[1:], x0.dtype)
        ys = np.zeros((len(batches), steps, bsz), y0.dtype)
        ws = np.zeros((len(batches), steps, bsz), np.float32)
        for c, cb in enumerate(batches):
            for s_, (x, y) in enumerate(cb):
                xs[c, s_, :len(y)], ys[c, s_, :len(y)], ws[c, s_, :len(y)] = x, y, 1.0
        return xs, ys, ws

    def step(self, datasets, infos, rnd):
        xs, ys, ws = self._padded_batches(datasets)
        groups = np.stack([i["group"] for i in infos]).astype(np.float32)
        seeds = np.stack([i["seed"] for i in infos]).astype(np.int32)
        counts = tf.constant(groups.sum(0), tf.float32)
        lr = tf.constant(self.cfg.local_lr * self.cfg.lr_decay ** rnd, tf.float32)
        slots = np.array([i.get("slot", -1) for i in infos], np.int32)
        sums, extra, stats = None, None, tf.zeros([4])
        for a in range(0, len(datasets), self.chunk):
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
        n = float(len(datasets))
        norm, clipped, loss, _ = (stats / n).numpy()
        return {"train_loss": float(loss), "clipped_fraction": float(clipped),
                "mean_update_norm": float(norm),
                "adaptive_clip": next_clip if self.factory.adaptive is not None else np.nan}


BACKENDS = {"tff": TFFBackend, "fast": FastBackend}
