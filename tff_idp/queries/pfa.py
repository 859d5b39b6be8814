"""The query of Projected Federated Averaging (PFA; Liu et al., VLDB 2021) in GDPFed's
3-group adaptation (003 App. B.2): the highest-budget group is public, the lowest group's mean update is projected
onto the principal subspace of the public clients' updates, the other groups are kept as
they are, and the group means are combined with the reweighting of GDPFed.

The projection is the original's (its public code, ``modules/server.py``, ``PFA.__projection``):
the public updates are centred on their mean mu_pub, V_k holds the top-k principal
directions of the centred updates, and the private mean is projected *around* the public
mean, V_k V_k^T (mean_priv - mu_pub) + mu_pub, so the direction the public and private
updates share is kept. The original does this for each model variable separately, rank k
per variable (``projection="per-layer"``, its default k = 1); ``"global"`` takes one
subspace of the whole flattened update. With a single public row nothing is centred (as the
original's ``__standardize`` does for one column).

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
from typing import NamedTuple, Optional, Sequence

import numpy as np
import tensorflow as tf

from .group_gaussian import GroupGaussianQuery


def public_rows(expected_public: float) -> int:
    """Rows S reserved for the public cohort: its expected size plus four standard
    deviations of a Poisson count."""
    return int(math.ceil(expected_public + 4 * math.sqrt(expected_public) + 2))


PROJECTIONS = ("per-layer", "global")


def principal_directions(rows, num_rows, rank: int, centre=True):
    """Top-``rank`` principal directions (d x rank, unit columns) of the first ``num_rows``
    rows of ``rows`` [S, d], centred on their mean (PFA's ``__standardize``; ``centre`` may
    be a boolean tensor), via the S x S Gram matrix (no d x d matrix; the original runs
    Lanczos on the same d x d covariance). Returns (directions, mean [d]); the mean is 0
    when not centred."""
    s = tf.shape(rows)[0]
    mask = tf.cast(tf.range(s) < num_rows, rows.dtype)[:, None]
    n = tf.maximum(tf.cast(num_rows, rows.dtype), 1.0)
    mean = tf.reduce_sum(rows * mask, 0) / n * tf.cast(centre, rows.dtype)
    centred = (rows - mean[None]) * mask
    gram = tf.matmul(centred, centred, transpose_b=True)
    _, vecs = tf.linalg.eigh(gram)                       # ascending eigenvalues
    directions = tf.matmul(centred, vecs[:, -rank:], transpose_a=True)   # d x rank
    return directions / tf.maximum(tf.norm(directions, axis=0, keepdims=True), 1e-12), mean


def project_around_mean(rows, num_rows, rank: int, target):
    """PFA's projection of a flat private mean ``target`` [d] (the original's
    ``__projection``): V_k V_k^T (target - mu_pub) + mu_pub, V_k and mu_pub from the first
    ``num_rows`` public rows [S, d] (not centred when there is only one)."""
    basis, mean = principal_directions(rows, num_rows, rank, centre=num_rows > 1)
    return tf.linalg.matvec(basis, tf.linalg.matvec(basis, target - mean,
                                                    transpose_a=True)) + mean


def _size(t) -> int:
    """Entries of one client's part of ``t`` (a tensor or spec with a leading client
    axis)."""
    return int(np.prod(t.shape[1:]))


class PFAProjection(NamedTuple):
    """What PFA projects: ``projected_group``'s mean onto the top-``rank`` principal subspace
    of ``public_group``'s individually noised updates, ``projection`` "per-layer" (the
    original's) or over the whole model; ``public_noise`` "full" (each public client adds its
    group's whole noise) or "share" (its share of the group sum's, a diagnostic reading)."""
    public_group: int = -1
    projected_group: int = 0
    rank: int = 1
    public_noise: str = "full"
    projection: str = "per-layer"


class PFAQuery(GroupGaussianQuery):
    """GroupGaussianQuery whose ``pfa.projected_group`` mean is projected onto the
    top-``pfa.rank`` principal subspace of ``pfa.public_group``'s individually noised client
    updates (:class:`PFAProjection`)."""

    # the server reads each public client's noised update (client_extra), not sums alone
    sums_only = False

    def __init__(self, clips: Sequence[float], noise_stddevs: Sequence[float],
                 expected_cohorts: Sequence[float], weights: Optional[Sequence[float]] = None,
                 pfa: PFAProjection = PFAProjection(),
                 noise_seed: Optional[int] = None):
        super().__init__(clips, noise_stddevs, expected_cohorts, weights, None,
                         noise_seed=noise_seed)
        public_group, projected_group, rank, public_noise, projection = pfa
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
        if projection not in PROJECTIONS:
            raise ValueError(f"projection={projection!r} is not one of {PROJECTIONS}")
        self.projection = projection
        self.rank = rank
        self.rows = public_rows(float(expected_cohorts[self.public_group]))

    def _noise_share(self, groups, state, counts):
        shared = super()._noise_share(groups, state, counts)
        if self.public_noise == "share":
            return shared
        full = tf.linalg.matvec(groups, state["noise_stddevs"])
        return tf.where(groups[:, self.public_group] > 0, full, shared)

    def seen_alone(self, groups, slots):
        """The public clients with a row of the [S, d] matrix (``slots`` [K] in [0, S)):
        the server reads their noised updates one by one."""
        return tf.logical_and(tf.logical_and(slots >= 0, slots < self.rows),
                              groups[:, self.public_group] > 0)

    def client_rows(self, groups, slots, noised):
        """The public clients with a row (:meth:`seen_alone`): their slots [P] and their
        noised updates flattened and concatenated over the model's tensors, [P, d]."""
        idx = tf.where(self.seen_alone(groups, slots))                          # [P, 1]
        rows = [tf.reshape(tf.gather_nd(t, idx), [-1, _size(t)]) for t in noised]
        return tf.cast(tf.gather_nd(slots, idx), tf.int32), tf.concat(rows, axis=1)

    def no_client_rows(self, weights):
        return tf.zeros([0], tf.int32), \
            tf.zeros([0, sum(int(np.prod(w.shape)) for w in weights)])

    def extra_from_rows(self, row_numbers, rows):
        """The [S, d] matrix of the public rows: update j in row ``row_numbers[j]`` (a
        client's slot is its own: no two rows land on one), zero rows elsewhere."""
        return tf.scatter_nd(row_numbers[:, None], rows, [self.rows, rows.shape[1]])

    def _server_transform(self, group_means, extra_sum, counts):
        """The projected group's mean, projected around the public mean (module docstring):
        per model tensor (``"per-layer"``, the public rows' columns of that tensor) or over
        the whole update (``"global"``)."""
        num_rows = tf.minimum(tf.cast(counts[self.public_group], tf.int32), self.rows)
        target = group_means[self.projected_group]
        sizes = [t.shape.num_elements() for t in target]
        flat = [tf.reshape(t, [-1]) for t in target]
        if self.projection == "global":
            projected = tf.split(project_around_mean(extra_sum, num_rows, self.rank,
                                                     tf.concat(flat, 0)), sizes)
        else:
            columns = tf.split(extra_sum, sizes, axis=1)
            projected = [project_around_mean(c, num_rows, min(self.rank, n), f)
                         for c, n, f in zip(columns, sizes, flat)]
        means = list(group_means)
        means[self.projected_group] = [tf.reshape(p, tf.shape(t))
                                       for p, t in zip(projected, target)]
        return means
