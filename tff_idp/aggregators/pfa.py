"""Projected Federated Averaging (PFA; Liu et al., VLDB 2021) in GDPFed's 3-group adaptation
(003 App. B.2): the highest-budget group is public, the lowest group's mean update is projected
onto the principal subspace of the public clients' updates, the other groups are kept as
they are, and the group means are combined with the reweighting of GDPFed.

The subspace needs the public clients' updates one by one, so (unlike GDPFed's shared noise
on a group sum) every public client adds its group's *full* noise N(0, s_pub^2) to its own
update, which the server then sees individually (each is (epsilon_pub, delta)-DP by itself,
as in PFA). They reach the server as rows of a [S, d] matrix: client j of the public cohort
writes its update into row ``slot`` j and the rows are summed; public clients beyond S rows
still count in the group sum but not in the subspace. The top-k directions come from the
S x S Gram matrix of the centred rows (V = U_c^T a_j for its top eigenvectors a_j), so no
d x d matrix is ever formed.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf

from .group_gaussian import GroupGaussianFactory


def public_rows(expected_public: float) -> int:
    """Rows S reserved for the public cohort: its expected size plus four standard
    deviations of a Poisson count."""
    return int(math.ceil(expected_public + 4 * math.sqrt(expected_public) + 2))


def principal_directions(rows, num_rows, rank: int):
    """Top-``rank`` principal directions (d x rank, unit columns) of the first ``num_rows``
    rows of ``rows`` [S, d], centred, via the S x S Gram matrix (no d x d matrix)."""
    s = tf.shape(rows)[0]
    mask = tf.cast(tf.range(s) < num_rows, rows.dtype)[:, None]
    n = tf.maximum(tf.cast(num_rows, rows.dtype), 1.0)
    centred = (rows - tf.reduce_sum(rows * mask, 0, keepdims=True) / n) * mask
    gram = tf.matmul(centred, centred, transpose_b=True)
    _, vecs = tf.linalg.eigh(gram)                       # ascending eigenvalues
    directions = tf.matmul(centred, vecs[:, -rank:], transpose_a=True)   # d x rank
    return directions / tf.maximum(tf.norm(directions, axis=0, keepdims=True), 1e-12)


class PFAFactory(GroupGaussianFactory):
    """GroupGaussianFactory whose ``projected_group`` mean is projected onto the top-``rank``
    principal subspace of ``public_group``'s individually noised client updates."""

    def __init__(self, clips: Sequence[float], noise_stddevs: Sequence[float],
                 expected_cohorts: Sequence[float], weights: Optional[Sequence[float]] = None,
                 public_group: int = -1, projected_group: int = 0, rank: int = 1,
                 public_noise: str = "full", noise_seed: int = 0):
        super().__init__(clips, noise_stddevs, expected_cohorts, weights, None,
                         noise_seed=noise_seed)
        # "full": every public client adds its group's whole noise (its row is seen alone);
        # "share": only its share of the group sum's noise, as in GDPFed's groups (a
        # diagnostic reading: the rows the server sees are then barely noised)
        if public_noise not in ("full", "share"):
            raise ValueError(f"public_noise={public_noise!r} is not 'full' or 'share'")
        self.public_noise = public_noise
        # public clients are noised one by one (module doc): noise_draw stays "client"
        m = self.num_groups
        self.public_group = public_group % m
        self.projected_group = projected_group % m
        if self.public_group == self.projected_group:
            raise ValueError("the public and the projected group must differ")
        if rank < 1:
            raise ValueError(f"rank={rank} must be >= 1")
        self.rank = rank
        self.rows = public_rows(float(expected_cohorts[self.public_group]))

    def create(self, value_type):
        if not hasattr(value_type, "slot"):
            raise TypeError(f"PFAFactory needs a 'slot' per client; got {value_type}")
        return super().create(value_type)

    def _noise_share(self, groups, state, counts):
        shared = super()._noise_share(groups, state, counts)
        if self.public_noise == "share":
            return shared
        full = tf.linalg.matvec(groups, state["noise_stddevs"])
        return tf.where(groups[:, self.public_group] > 0, full, shared)

    def client_extra(self, groups, seeds, slots, noised):
        """Public client j's noised update in row ``slots[j]`` of an [S, d] matrix, summed
        over the K clients (rows of other clients, or beyond S, are zero)."""
        flat = tf.concat([tf.reshape(t, [tf.shape(t)[0], -1]) for t in noised], axis=1)
        valid = tf.logical_and(tf.logical_and(slots >= 0, slots < self.rows),
                               groups[:, self.public_group] > 0)
        rows = tf.one_hot(tf.where(valid, slots, 0), self.rows) * tf.cast(valid, tf.float32)[:, None]
        return tf.matmul(rows, flat, transpose_a=True)

    def client_extra_zeros(self, tensors):
        return tf.zeros([self.rows, sum(int(np.prod(t.shape)) for t in tensors)], tf.float32)

    def _server_transform(self, group_means, extra_sum, counts):
        num_rows = tf.minimum(tf.cast(counts[self.public_group], tf.int32), self.rows)
        basis = principal_directions(extra_sum, num_rows, self.rank)
        target = group_means[self.projected_group]
        flat = tf.concat([tf.reshape(t, [-1]) for t in target], axis=0)
        projected = tf.linalg.matvec(basis, tf.linalg.matvec(basis, flat, transpose_a=True))
        parts = tf.split(projected, [tf.size(t) for t in target])
        means = list(group_means)
        means[self.projected_group] = [tf.reshape(p, tf.shape(t)) for p, t in zip(parts, target)]
        return means
