"""The clip / noise / top-k arithmetic of client-level DP, in TensorFlow.

One implementation shared by the TFF aggregation factories (``tff_idp.aggregators``) and any
other runner: these functions take and return flat lists of tensors and never touch TFF.
"""
from __future__ import annotations

import tensorflow as tf


def global_norm(tensors):
    return tf.linalg.global_norm([tf.cast(t, tf.float32) for t in tensors])


def clip_by_l2(tensors, clip):
    """Delta_bar = Delta * min(1, C / ||Delta||_2) (GDPFed Alg. 1 line 12; 003 Alg. 2 line 11).

    Returns (clipped tensors, pre-clip norm, whether it was clipped). ``clip = inf`` keeps the
    update unchanged."""
    norm = global_norm(tensors)
    scale = tf.minimum(1.0, clip / tf.maximum(norm, 1e-12))
    scale = tf.where(tf.math.is_inf(clip), tf.ones_like(scale), scale)
    return [t * scale for t in tensors], norm, tf.cast(norm > clip, tf.float32)


def gaussian_noise_like(tensors, stddev, seed, stream: int = 0):
    """Independent N(0, stddev^2) per coordinate, from a stateless seed (int32[2]): the same
    seed gives the same noise, whatever runner draws it. ``stream`` separates independent
    draws from one seed (0: the update, 1: adaptive clipping's bit)."""
    out = []
    for i, t in enumerate(tensors):
        s = tf.random.experimental.stateless_fold_in(seed, i + stream * (1 << 20))
        out.append(tf.random.stateless_normal(tf.shape(t), s, dtype=t.dtype) * stddev)
    return out


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
    _, idx = tf.math.top_k(tf.abs(flat), k=k, sorted=False)
    mask = tf.scatter_nd(tf.expand_dims(idx, 1), tf.ones([k], flat.dtype), [d])
    kept = flat * mask
    parts = tf.split(kept, sizes)
    return [tf.reshape(p, s) for p, s in zip(parts, shapes)], k, d
