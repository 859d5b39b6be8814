"""The TensorFlow side of DP-pFedDSU's reparameterised training (paper 001; the description
is ``tff_idp.models.reparam.TopKReparam``): per-kernel top-k masks, the masked forward's
weights and the norm penalty's gradient, for one client's weights or K clients' stacked
weights (a leading client axis), so that the TFF client, the fast backend's client loop and
its cohort trainer compute the same numbers.
"""
from __future__ import annotations

from typing import List, Optional

import tensorflow as tf


def topk_masks(spec, params, batched: bool) -> List[Optional[tf.Tensor]]:
    """Per tensor the 0/1 mask keeping the k_j entries of largest magnitude of each masked
    kernel (paper 001 Eq. 6, per layer), None for the others. ``batched``: tensors carry a
    leading client axis and each client gets its own mask. Ties go to the lower index
    (``tf.math.top_k``), so the count is exactly k_j."""
    out: List[Optional[tf.Tensor]] = [None] * len(params)
    for i, k in zip(spec.tensors, spec.keep):
        p = params[i]
        flat = tf.reshape(tf.abs(p), [tf.shape(p)[0], -1] if batched else [1, -1])
        _, idx = tf.math.top_k(flat, k=k, sorted=False)                    # [K, k]
        rows = tf.broadcast_to(tf.range(tf.shape(idx)[0])[:, None], tf.shape(idx))
        hit = tf.scatter_nd(tf.stack([rows, idx], axis=-1), tf.ones(tf.shape(idx), p.dtype),
                            tf.shape(flat))
        out[i] = tf.reshape(hit, tf.shape(p))
    return out


def apply_masks(params, masks) -> list:
    """theta * M per tensor (Eq. 7); a tensor without a mask as it is."""
    return [p if m is None else p * m for p, m in zip(params, masks)]


def penalty(spec, params, start, masks, batched: bool):
    """Eq. 10's penalty (lambda / 2) | ||(theta - theta_0) * M||_2 - C | and its gradient
    with respect to theta, over the shared part (the extractor): returns (value [K] or
    scalar, gradient per tensor). The gradient is (lambda / 2) sign(n - C) (theta - theta_0)
    * M / n (M is 0/1, so M^2 = M), and 0 where n = 0: the first local step, where a norm's
    gradient is undefined (TF's ``tf.norm`` gives NaN there; PyTorch's subgradient is 0)."""
    diffs = []
    for p, s, m, shared in zip(params, start, masks, spec.shared):
        d = p - s
        if m is not None:
            d = d * m
        if shared is not None:
            d = d * shared
        diffs.append(d)
    norm = tf.sqrt(sum_squares(diffs, batched))
    value = 0.5 * spec.penalty * tf.abs(norm - spec.target_norm)
    scale = tf.where(norm > 0, 0.5 * spec.penalty * tf.sign(norm - spec.target_norm)
                     / tf.where(norm > 0, norm, 1.0), tf.zeros_like(norm))
    grads = []
    for d in diffs:
        s = tf.reshape(scale, tf.concat([tf.shape(scale), tf.ones([tf.rank(d) - 1],
                                                                  tf.int32)], 0)) \
            if batched else scale
        grads.append(s * d)
    return value, grads


def sum_squares(tensors, batched: bool):
    """The squared l2 norm over all ``tensors``: per client [K] when they carry a leading
    client axis (``batched``), else a scalar."""
    if batched:
        return tf.add_n([tf.reduce_sum(tf.reshape(tf.square(t), [tf.shape(t)[0], -1]), axis=1)
                         for t in tensors])
    return tf.add_n([tf.reduce_sum(tf.square(t)) for t in tensors])
