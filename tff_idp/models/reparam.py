"""DP-pFedDSU's reparameterised training (paper 001, Sec. IV-B; Eqs. 6-8, 10-13): which
kernels are sparsified, how many entries each keeps, and the norm penalty's settings, as a
plain description the trainers (``algorithms.sparse_training``) and the evaluation read.

- **Which kernels** (Eq. 8 as the text reads it: "we reparameterize the last k layers"): the
  last ``layers`` weight kernels of the shared extractor (Conv2D and Dense kernels in
  network order; biases and GroupNorm gamma/beta are not layers and stay dense; the
  personal head is not part of the extractor).
- **How many** (Eq. 6, "Topk ... within each layer"): kernel j keeps k_j = round(S d_j) of
  its d_j entries, those of largest magnitude (at least one).
- **Where masks come from**: ``"local"`` (the paper: recomputed from the client's own
  weights at every local step and for the upload, Algorithm 1 lines 6 and 11) or
  ``"global"`` (from the broadcast weights, fixed for the round and the same for every
  client: the reading under which the Gaussian mechanism's guarantee holds, see
  ``methods.dsu``).
- **Penalty** (Eq. 10, reconstructed): (lambda / 2) | ||(theta - theta_0) * M||_2 - C | over
  the whole extractor (dense kernels with M = 1), C the clip norm.

Nothing here imports TensorFlow.
"""
from __future__ import annotations

import dataclasses
from typing import List, Optional, Tuple

import numpy as np

KERNEL_LAYERS = ("Conv2D", "Dense")


@dataclasses.dataclass(frozen=True)
class TopKReparam:
    tensors: Tuple[int, ...]      # indices (model.trainable_variables order) of masked kernels
    keep: Tuple[int, ...]         # k_j per masked kernel
    source: str                   # "local" or "global"
    penalty: float                # lambda of Eq. 10 (0: no penalty, Table IV's RT-only row)
    target_norm: float            # C of Eq. 10
    # per tensor the shared mask of the split (None: wholly shared): the penalty's norm and
    # the sparsified extractor are over the shared part only
    shared: Tuple[Optional[np.ndarray], ...] = ()
    # evaluation runs the masked forward too (``dsu_eval_masked``; masks of the evaluated
    # weights)
    in_evaluation: bool = True

    def masks_np(self, weights) -> List[Optional[np.ndarray]]:
        """Per tensor the 0/1 top-k mask of ``weights`` (numpy; None for dense tensors): the
        evaluation's masked forward, from the evaluated weights."""
        out: List[Optional[np.ndarray]] = [None] * len(weights)
        for i, k in zip(self.tensors, self.keep):
            w = np.abs(np.asarray(weights[i], np.float32)).ravel()
            m = np.zeros(w.size, np.float32)
            # largest |w| first; ties by lower index, as tf.math.top_k
            m[np.argsort(-w, kind="stable")[:k]] = 1.0
            out[i] = m.reshape(np.shape(weights[i]))
        return out

    def apply_np(self, weights) -> List[np.ndarray]:
        """theta * M (Eq. 7, forward-pass sparsification) with M from ``weights``."""
        masks = self.masks_np(weights)
        return [np.asarray(w) if m is None else np.asarray(w) * m
                for w, m in zip(weights, masks)]


def extractor_kernels(model, split) -> List[int]:
    """Indices of the shared extractor's weight kernels (Conv2D, Dense), in network order:
    the candidates of Eq. 8. A kernel with any personal coordinate is not the extractor's."""
    position = {v.ref(): i for i, v in enumerate(model.trainable_variables)}
    out = []
    for layer in model.layers:
        if type(layer).__name__ in KERNEL_LAYERS:
            i = position[layer.kernel.ref()]
            if split.masks[i] is None:
                out.append(i)
    return out


def build_reparam(model, split, sparsity: float, layers: int, source: str, penalty: float,
                  target_norm: float, in_evaluation: bool = True) -> TopKReparam:
    """The :class:`TopKReparam` of ``model``: its last ``layers`` extractor kernels. Raises
    ValueError (one line) when the extractor has fewer kernels."""
    kernels = extractor_kernels(model, split)
    if layers > len(kernels):
        raise ValueError(f"dsu_layers={layers}: the extractor of model {model.name!r} has "
                         f"{len(kernels)} weight kernels")
    chosen = tuple(kernels[-layers:])
    sizes = [int(np.prod(model.trainable_variables[i].shape)) for i in chosen]
    keep = tuple(max(1, int(round(sparsity * d))) for d in sizes)
    return TopKReparam(chosen, keep, source, float(penalty), float(target_norm),
                       tuple(split.masks), in_evaluation)
