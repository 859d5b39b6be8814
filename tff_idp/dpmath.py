"""The clip / noise / top-k arithmetic of client-level DP, in TensorFlow.

One implementation shared by the TFF aggregation factories (``tff_idp.aggregators``) and any
other runner: these functions take and return flat lists of tensors and never touch TFF.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf


def norms_per_client(tensors):
    """||Delta_k||_2 over all of client k's tensors, for tensors with a leading client axis
    [K, ...]: returns [K]."""
    return tf.sqrt(tf.add_n([
        tf.reduce_sum(tf.square(tf.cast(t, tf.float32)), axis=tf.range(1, tf.rank(t)))
        for t in tensors]))


def clip_scales(norm, clips):
    """min(1, C_k / ||Delta_k||_2) per client (GDPFed Alg. 1 line 12; 003 Alg. 2 line 11)
    from pre-clip norms [K] and clips [K] (``C_k = inf``: 1), and 1/0 whether client k was
    clipped: (scales [K], clipped indicators [K])."""
    scale = tf.minimum(1.0, clips / tf.maximum(norm, 1e-12))
    scale = tf.where(tf.math.is_inf(clips), tf.ones_like(scale), scale)
    return scale, tf.cast(norm > clips, tf.float32)


def scaled_per_client(tensors, scale):
    """Each client's tensors ([K, ...]) times its scale [K]."""
    return [t * tf.reshape(scale, tf.concat([[-1], tf.ones([tf.rank(t) - 1], tf.int32)], 0))
            for t in tensors]


def clip_by_l2(tensors, clips):
    """Delta_bar_k = Delta_k * min(1, C_k / ||Delta_k||_2) for every client k (GDPFed Alg. 1
    line 12; 003 Alg. 2 line 11), on tensors with a leading client axis [K, ...] and clips
    [K].

    Returns (clipped tensors, pre-clip norms [K], clipped indicators [K]). ``C_k = inf`` keeps
    client k's update unchanged."""
    norm = norms_per_client(tensors)
    scale, clipped = clip_scales(norm, clips)
    return scaled_per_client(tensors, scale), norm, clipped


def _normal(shape, dtype, stddev, seed, index, stream):
    """N(0, stddev^2) of ``shape`` for tensor ``index`` of a draw from ``seed`` (int32[2])."""
    s = tf.random.experimental.stateless_fold_in(seed, index + stream * (1 << 20))
    return tf.random.stateless_normal(shape, s, dtype=dtype) * stddev


def secret_seed():
    """int32[2]: a fresh noise seed drawn from the operating system's entropy, inside the
    TensorFlow computation that calls it (a random op with both seeds 0 seeds itself from the
    OS, whatever global seed the caller set): nobody can compute it from public values, and
    no two clients, rounds or processes share one. The default source of every noise draw
    the library makes (docs/privacy.md, "Who can predict the noise")."""
    return tf.raw_ops.RandomUniformInt(shape=tf.constant([2]), minval=np.int32(-2**31),
                                       maxval=np.int32(2**31 - 1), seed=0, seed2=0)


def gaussian_noise_like(tensors, stddev, seed, stream: int = 0):
    """Independent N(0, stddev^2) per coordinate, from a stateless seed (int32[2]): the same
    seed gives the same noise, whatever runner draws it. ``stream`` separates independent
    draws from one seed (0: the update, 1: adaptive clipping's bit)."""
    return [_normal(tf.shape(t), t.dtype, stddev, seed, i, stream) for i, t in enumerate(tensors)]


def gaussian_noise_per_client(tensors, stddevs, seeds, stream: int = 0):
    """:func:`gaussian_noise_like` for each client k of tensors with a leading client axis
    [K, ...], with its own stddev [K] and seed [K, 2]: client k gets exactly the noise that
    ``gaussian_noise_like([t[k] ...], stddevs[k], seeds[k])`` gives, however many clients are
    drawn together."""
    specs = [tf.TensorSpec(t.shape[1:], t.dtype) for t in tensors]
    return tf.map_fn(                       # as written: no tensor decides a branch here
        tf.autograph.experimental.do_not_convert(
            lambda a: [_normal(sp.shape, sp.dtype, a[0], a[1], i, stream)
                       for i, sp in enumerate(specs)]),
        (stddevs, seeds), fn_output_signature=specs)


def top_k_mask(tensors, keep_fraction):
    """Top_k over all coordinates of the flattened vector (GDPFed Alg. 3 / 000 Alg. 2):
    keep the k = round(keep_fraction * d) entries of largest absolute value, zero the rest.
    Exactly k entries are kept (ties broken by position, as a stable sort would)."""
    shapes = [tf.shape(t) for t in tensors]
    sizes = [tf.size(t) for t in tensors]
    flat = tf.concat([tf.reshape(t, [-1]) for t in tensors], axis=0)
    d = tf.size(flat)
    k = tf.cast(tf.round(keep_fraction * tf.cast(d, tf.float32)), tf.int32)
    k = tf.clip_by_value(k, 0, d)

    def masked():
        _, idx = tf.math.top_k(tf.abs(flat), k=k, sorted=False)
        return flat * tf.scatter_nd(tf.expand_dims(idx, 1), tf.ones([k], flat.dtype), [d])

    kept = tf.cond(k >= d, lambda: flat, masked)        # keep all: no sort needed
    parts = tf.split(kept, sizes)
    return [tf.reshape(p, s) for p, s in zip(parts, shapes)], k, d
