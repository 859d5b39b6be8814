"""The group-wise client-level Gaussian mechanism as a DP query, in TensorFlow without TFF
(GDPFed, papers 000/003, Algorithm 1), as TFF's ``DifferentiallyPrivateFactory`` wraps a
``DPQuery``: :class:`GroupGaussianQuery` holds the per-group parameters and does a round's
arithmetic on tensors, the clients' record step (:meth:`~GroupGaussianQuery.client_math`:
clip, noise share, adaptive clipping's bit), the server's step
(:meth:`~GroupGaussianQuery.server_math`: the server's draws, Top_k, group means,
reweighting) and the state's update (:meth:`~GroupGaussianQuery.state_update_math`). The TFF
factory (``tff_idp.aggregators.GroupGaussianFactory``) places these on the clients and the
server; the fast backend (``tff_idp.engine.backends.FastBackend``) calls them on a chunk of
clients at once: one implementation of each mechanism.


Each client brings its update, a one-hot float32[M] row naming its privacy group, and an
int32[2] noise seed. One round:

1. the cohort size per group k_m is summed (the server knows it: it sampled the cohort);
2. every client clips its update to C_m (line 12) and adds N(0, s_m^2 / k_m) per coordinate
   (line 13), so that group m's sum carries exactly N(0, s_m^2) noise with s_m = sigma_m C
   (the paper writes C^2 sigma_m^2 / r_m with r_m = k_m for fixed-size cohorts; with Poisson
   cohorts dividing by the realised k_m keeps the group's noise at the calibrated level);
3. the updates are summed per group (an [M, ...] sum: what secure aggregation reveals);
4. the server applies Top_k per group with k_m/d (line 17, Alg. 3), divides each group sum by
   its expected cohort r_m (or by k_m when the group is not private) and combines the group
   means with weights w_m (line 19; w_m = r_m^2 / sum r^2, see
   ``tff_idp.privacy.gdpfed.group_weights``).

Every round releases every private group's noise, also when the group's cohort is empty (a
Poisson cohort may be): the server then draws N(0, s_m^2) on the group's zero sum, as TFF's
DP aggregator noises a zero sum. Otherwise an empty round would be an exact, un-noised
release whose probability depends on whether the target client was sampled, which the
sampled Gaussian's accounting does not cover (n = 50, q = 0.04, T = 100: epsilon 1.000
claimed, about 1.15 with the empty-round event). The same holds for adaptive clipping's
noised bit count in a round with no client at all.
"""
from __future__ import annotations

import collections
import copy
import dataclasses
import math
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf

from .. import dpmath
from ..privacy.threat_model import NOISE_DRAWS
STATE_KEYS = ("clips", "noise_stddevs", "expected_cohorts", "weights", "keep_fractions",
              "private")


def check_noise_seed(noise_seed) -> None:
    """``noise_seed`` is None (a secret seed) or an int32, else a one-line error naming it
    (the query's, and every library builder's that passes one on)."""
    if noise_seed is None:
        return
    if isinstance(noise_seed, bool) or not isinstance(noise_seed, (int, np.integer)):
        raise TypeError(f"noise_seed={noise_seed!r}: must be None (a secret seed, the "
                        "default) or an integer")
    if not -2**31 <= noise_seed < 2**31:
        raise ValueError(f"noise_seed={noise_seed!r}: must fit in int32")


@dataclasses.dataclass(frozen=True)
class AdaptiveClipping:
    """Adaptive clipping of Andrew et al. (2021), Alg. 1, on the shared clip of every group:
    each client also reports (1[norm <= C] - 1/2) with its share of N(0, count_stddev^2); the
    server forms b = noised sum / expected cohort + 1/2 and sets C <- C exp(-lr (b - target)).
    The update noise is value_noise_multiplier x the current C (Thm. 1 splits the total z
    between the two, ``tff_idp.privacy.idp.value_noise_multiplier``). Same algorithm as TFF's
    ``DifferentiallyPrivateFactory.gaussian_adaptive``, with our seeded noise."""
    value_noise_multiplier: float
    count_stddev: float
    target_quantile: float = 0.5
    learning_rate: float = 0.2


class GroupGaussianQuery:
    """Per-group clip + client-side Gaussian noise + per-group sum + top-k + reweighting, on
    tensors (module docstring).

    Args:
      clips: C_m per group (``math.inf`` for no clipping).
      noise_stddevs: s_m, std of the noise on group m's *sum* (sigma_m * C for GDPFed; the
        shared sigma_bar * C for IDP SCALE); 0 for none.
      expected_cohorts: r_m = q_m |G_m|, the denominator of each group mean.
      weights: w_m combining group means (defaults to r_m^2 / sum r^2).
      keep_fractions: k_m/d of Top_k per group (defaults to 1: no sparsification).
      noise_draw: ``"client"`` (Alg. 1 line 13 as written: every client draws its share
        N(0, s_m^2 / k_m) from its own seed) or ``"group"`` (the server draws N(0, s_m^2) once
        per group sum, from a secret seed or ``(noise_seed, round)``). The noised group sums
        have the same distribution either way (a sum of k_m independent N(0, s_m^2/k_m) is
        N(0, s_m^2)), so a simulation's numbers are the same; "group" draws d numbers per
        group instead of d per client, which is most of a round's cost on a CPU. The threat
        models differ: with "client" the noise is added before anything leaves a client, so
        (with secure aggregation) the guarantee holds against an honest-but-curious server,
        the papers' assumption; with "group" the server drew the noise and can subtract it,
        so the guarantee holds only against those who see the released model, with a
        trusted server (run summaries record ``privacy.guarantee.trusted_server``).
      noise_seed: the source of the server's draws (every group's noise with ``"group"``;
        an empty group's and an empty round's with ``"client"``). None (the default): a
        fresh seed from the operating system's entropy each round (``dpmath.secret_seed``),
        which nobody can recompute. An int32: the seed (noise_seed, round), reproducible,
        for simulation only: whoever knows it subtracts the noise from the released model
        and recovers the exact clipped sum, so every guarantee then holds only while the
        seed stays secret (the suite's simulator seeds from the run's seed, docs/privacy.md).
    """

    # an empty group's sum is released with its noise (module docstring); the round loop
    # runs a round with no client at all through the aggregator for the same reason
    noise_in_empty_rounds = True
    # what the server reads of the clients is their per-group sums alone (no client's own
    # output, as PFA's public rows): a runner may form the sums without each client's tensors
    # (and, with :meth:`seen_alone` all False, draw their noise shares as one sum per group)
    sums_only = True

    def __init__(self, clips: Sequence[float], noise_stddevs: Sequence[float],
                 expected_cohorts: Sequence[float], weights: Optional[Sequence[float]] = None,
                 keep_fractions: Optional[Sequence[float]] = None,
                 adaptive: Optional[AdaptiveClipping] = None, noise_draw: str = "client",
                 noise_seed: Optional[int] = None):
        m = len(clips)
        check_noise_seed(noise_seed)
        if noise_draw not in NOISE_DRAWS:
            raise ValueError(f"noise_draw={noise_draw!r} is not one of {NOISE_DRAWS}")
        r = np.asarray(expected_cohorts, dtype=float)
        if len(noise_stddevs) != m or len(r) != m:
            raise ValueError("clips, noise_stddevs and expected_cohorts need one entry per group")
        if np.any(r <= 0):
            raise ValueError(f"expected_cohorts={list(expected_cohorts)} must be positive")
        if any(c <= 0 for c in clips) or any(s < 0 for s in noise_stddevs):
            raise ValueError("clips must be positive and noise_stddevs non-negative")
        w = r ** 2 / np.sum(r ** 2) if weights is None else np.asarray(weights, dtype=float)
        k = np.ones(m) if keep_fractions is None else np.asarray(keep_fractions, dtype=float)
        if np.any(k < 0) or np.any(k > 1):
            raise ValueError(f"keep_fractions={list(k)} must be in [0, 1]")
        private = np.asarray([s > 0 or not math.isinf(c) for c, s in zip(clips, noise_stddevs)])
        self.num_groups = m
        self.adaptive = adaptive
        self.noise_draw = noise_draw
        self.noise_seed = None if noise_seed is None else int(noise_seed)
        self._params = collections.OrderedDict(
            clips=np.asarray(clips, np.float32),
            noise_stddevs=np.asarray(noise_stddevs, np.float32),
            expected_cohorts=r.astype(np.float32), weights=w.astype(np.float32),
            keep_fractions=k.astype(np.float32), private=private.astype(np.float32))
        if adaptive is not None:
            if len(set(np.asarray(clips, float).tolist())) != 1:
                raise ValueError("adaptive clipping adapts one clip shared by every group")
            self._params.update(
                value_noise_multiplier=np.float32(adaptive.value_noise_multiplier),
                count_stddev=np.float32(adaptive.count_stddev),
                target_quantile=np.float32(adaptive.target_quantile),
                clip_learning_rate=np.float32(adaptive.learning_rate))
        # rounds aggregated so far: with a fixed noise_seed, the seed of the server's draws
        # (every group's noise with noise_draw="group"; an empty group's and an empty
        # round's bit noise with "client")
        self._params.update(round=np.float32(0))

    def initial_state_tensors(self):
        return collections.OrderedDict((k, tf.constant(v, tf.float32))
                                       for k, v in self._params.items())

    def client_math(self, tensors, groups, seeds, state, counts, support=None, noise=True):
        """K clients at once (tensors [K, ...], one-hot groups [K, M], seeds [K, 2]; K = 1
        in the TFF client computation): clip client k to C_m (Alg. 1 line 12), add its share
        of the group noise drawn from its own seed (line 13; ``noise_draw="client"``),
        times its ``support`` where given (per tensor [K, ...] 0/1 or None: DP-pFedDSU's
        xi_i * M_tau, paper 001 Eq. 13).
        Returns (noised tensors [K, ...], pre-clip norms [K], clipped indicators [K], noised
        adaptive-clipping bits [K]: (1[norm <= C] - 1/2) + its share of
        N(0, count_stddev^2), 0 without adaptive clipping). ``noise=False``: the shares
        are left out, for a runner that draws their sum (:meth:`client_noise_sum`)."""
        clipped, norm, was_clipped = dpmath.clip_by_l2(
            tensors, tf.linalg.matvec(groups, state["clips"]))
        shares = self.client_noise(clipped, groups, seeds, state, counts, support) \
            if noise else None
        noised = clipped if shares is None else [c + n for c, n in zip(clipped, shares)]
        return noised, norm, was_clipped, self.client_bits(norm, was_clipped, seeds, state,
                                                           counts)

    # client_math in parts, for a runner that holds a client's update in another form than
    # its tensors (the fast backend's factored Dense updates, ``engine.low_rank``): the
    # clip scales from the pre-clip norms, the noise shares, the adaptive-clipping bits

    def clip_scales(self, norm, groups, state):
        """min(1, C_m / ||Delta_k||) per client from its pre-clip norm [K] (Alg. 1 line
        12): (scales [K], clipped indicators [K])."""
        return dpmath.clip_scales(norm, tf.linalg.matvec(groups, state["clips"]))

    def client_noise(self, like, groups, seeds, state, counts, support=None):
        """Each client's share of its group's noise, drawn from its own seed (Alg. 1 line 13),
        per tensor [K, ...] of the shapes of ``like`` (tensors or ``tf.TensorSpec`` with the
        client axis first), on the shared coordinates and the ``support`` where given; None
        when the server draws the noise (``noise_draw="group"``)."""
        if self.noise_draw != "client":
            return None
        shares = self._noise_share(groups, state, counts)
        noise = self._on_shared(dpmath.gaussian_noise_per_client(like, shares, seeds))
        if support is not None:
            noise = [n if m is None else n * m for n, m in zip(noise, support)]
        return noise

    def client_noise_sum(self, like, groups, seed, state, counts):
        """The sum over K clients of their shares (:meth:`client_noise`, without a
        ``support``) drawn at once: group m's sum gets N(0, sum_k groups[k, m] share_k^2)
        per coordinate, the distribution of a sum of independent Gaussian shares (Alg. 1
        line 13 summed over the group), from one ``seed`` (int32[2]); per tensor [M, ...]
        of the shapes of ``like`` (the group sums). For a simulator that reads the sums
        alone (``sums_only``): who draws is unchanged in the protocol, only the simulator
        draws M numbers a coordinate instead of K."""
        shares = self._noise_share(groups, state, counts)
        std = tf.sqrt(tf.linalg.matvec(groups, tf.square(shares), transpose_a=True))   # [M]
        return self._per_group_noise(like, std, seed)

    def client_bits(self, norm, was_clipped, seeds, state, counts):
        """Adaptive clipping's noised bits [K] (Andrew et al. Alg. 1): (1[norm <= C] - 1/2)
        plus the client's share of N(0, count_stddev^2); zeros without adaptive clipping."""
        bit = tf.zeros_like(norm)
        if self.adaptive is None:
            return bit
        cohort = tf.maximum(tf.reduce_sum(counts), 1.0)
        share = state["count_stddev"] / tf.sqrt(cohort)
        bit_noise = dpmath.gaussian_noise_per_client(
            [bit], tf.fill(tf.shape(norm), share), seeds, stream=1)[0]
        return (1.0 - was_clipped) - 0.5 + bit_noise

    def state_update_math(self, state, bit_sum, counts):
        """Adaptive clipping's server step (Andrew et al. Alg. 1): b = bit_sum / (expected
        cohort) + 1/2 clamped to [0, 1], C <- C exp(-lr (b - target)), update noise std
        z_delta C; in a round with no client (``counts`` all 0) the server draws the bit
        sum's N(0, count_stddev^2) itself (module docstring). Without adaptive clipping the
        state is unchanged but for the round count (the seed of the server's draws)."""
        new = collections.OrderedDict(state)
        new["round"] = state["round"] + 1.0
        if self.adaptive is None:
            return new
        bit_sum = tf.cond(
            tf.reduce_sum(counts) > 0, lambda: bit_sum,
            lambda: bit_sum + state["count_stddev"] * tf.random.stateless_normal(
                [], self._round_seed(state, stream=1)))
        expected = tf.reduce_sum(state["expected_cohorts"])
        unclipped = tf.clip_by_value(bit_sum / expected + 0.5, 0.0, 1.0)   # noise can overshoot
        clips = state["clips"] * tf.exp(-state["clip_learning_rate"] *
                                        (unclipped - state["target_quantile"]))
        new["clips"] = clips
        new["noise_stddevs"] = state["value_noise_multiplier"] * clips
        return new

    def server_math(self, sums, extra_sum, state, counts):
        """From per-group sums ([M, ...] per tensor) to the model update: Top_k per group
        (line 17), group means over r_m, post-processing hook, weighted combination
        (line 19). Returns (update tensors, kept fraction per group)."""
        m = self.num_groups
        if self.noise_draw == "group":
            sums = self.group_noised(sums, state)
        elif self.noise_in_empty_rounds:       # an empty private group: the server's draw
            empty = tf.cast(counts <= 0, tf.float32) * state["private"]
            sums = tf.cond(tf.reduce_any(empty > 0),
                           lambda: self.group_noised(sums, state, empty), lambda: list(sums))
        means, kept_fraction = [], []
        for g in range(m):
            kept, k, d = dpmath.top_k_mask([s[g] for s in sums], state["keep_fractions"][g])
            kept_fraction.append(tf.cast(k, tf.float32) / tf.cast(d, tf.float32))
            denom = self._denominator(state, counts, g)   # a zero sum stays zero (not private)
            means.append([t / denom for t in kept])
        means = self._server_transform(means, extra_sum, counts)
        total = [tf.zeros_like(s[0]) for s in sums]
        for g in range(m):
            total = [acc + state["weights"][g] * t for acc, t in zip(total, means[g])]
        return [tf.cast(t, s.dtype) for t, s in zip(total, sums)], tf.stack(kept_fraction)

    def group_noised(self, sums, state, groups=None):
        """Each group sum ([M, ...] per tensor) plus N(0, s_m^2) per coordinate, drawn by the
        server from a secret seed or (noise_seed, round): the distribution the clients' shares give
        it (Alg. 1 line 13 summed over the group). ``groups`` ([M] 0/1, default all): the
        groups to noise (with ``noise_draw="client"``, the empty ones)."""
        std = state["noise_stddevs"] if groups is None else state["noise_stddevs"] * groups
        return [s + n for s, n in zip(sums, self._per_group_noise(sums, std,
                                                                  self._round_seed(state)))]

    def _per_group_noise(self, like, std, seed):
        """N(0, std_m^2) per coordinate of each group's row ([M, ...] per tensor of the
        shapes of ``like``), on the shared coordinates, from ``seed`` (int32[2])."""
        noise = self._on_shared(dpmath.gaussian_noise_like(like, 1.0, seed))
        return [tf.reshape(std, [-1] + [1] * (len(n.shape) - 1)) * n for n in noise]

    def _round_seed(self, state, stream: int = 0):
        """int32[2] seed of the server's draws in this round (stream 1: the bit count's): a
        fresh secret one without a fixed ``noise_seed`` (class docstring)."""
        if self.noise_seed is None:
            return dpmath.secret_seed()
        return tf.stack([tf.constant(self.noise_seed, tf.int32),
                         tf.cast(state["round"], tf.int32) + stream * (1 << 30)])

    # Which coordinates are released: a method with a personal part sends zeros on it, and
    # the noise goes on the shared coordinates only (``shared_masks``: per tensor a 0/1 mask
    # or None for wholly shared; None for all shared), given by :meth:`on_shared`.
    shared_masks = None

    def on_shared(self, masks: Optional[Sequence]) -> "GroupGaussianQuery":
        """This query with its noise on the shared coordinates ``masks`` only (a new query,
        this one unchanged; None: every coordinate shared). The factories build theirs so
        from the method's parameter split (``tff_idp.models.split``)."""
        if masks is None:
            return self
        shared = copy.copy(self)
        shared.shared_masks = list(masks)
        return shared

    def _on_shared(self, noise):
        if self.shared_masks is None:
            return noise
        return [n if m is None else n * m for n, m in zip(noise, self.shared_masks)]

    # Hooks for variants (PFA); the defaults are GDPFed's Algorithm 1.

    def _noise_share(self, groups, state, counts):
        """Per-client noise std [K]: s_m / sqrt(k_m), so group m's sum carries N(0, s_m^2)."""
        return tf.linalg.matvec(groups, state["noise_stddevs"] / tf.sqrt(tf.maximum(counts, 1.0)))

    def _denominator(self, state, counts, g):
        """Group g's divisor: its expected cohort r_m when private (Alg. 1 line 19), its
        realised count otherwise."""
        return tf.where(state["private"][g] > 0, state["expected_cohorts"][g],
                        tf.maximum(counts[g], 1.0))

    def seen_alone(self, groups, slots):
        """[K] bool: the clients whose own noised output the server reads by itself (none
        here: it reads the group sums alone; PFA's public rows). A simulator that draws the
        clients' noise shares as one sum per group (:meth:`client_noise_sum`) must still
        draw these clients' shares one by one, from their own seeds."""
        return tf.zeros(tf.shape(groups)[:1], tf.bool)

    def client_extra(self, groups, seeds, slots, noised):
        """The sum over K clients of anything else they contribute (nothing here; PFA's
        public rows): :meth:`extra_from_rows` of their :meth:`client_rows`. ``slots`` [K]
        (PFA) or None."""
        return self.extra_from_rows(*self.client_rows(groups, slots, noised))

    def client_rows(self, groups, slots, noised):
        """(row numbers [P] int32, rows [P, D]): the flat noised outputs of the P clients
        the server reads one by one (:meth:`seen_alone`; none here) and where each goes. A
        simulator gathers them chunk by chunk and places them once a round
        (:meth:`extra_from_rows`), instead of making and summing PFA's [S, D] matrix of
        public rows for every chunk."""
        return tf.zeros([0], tf.int32), tf.zeros([0, 0], tf.float32)

    def no_client_rows(self, weights):
        """:meth:`client_rows` of no client, for a model of ``weights`` (anything with a
        ``shape`` per model tensor, no client axis)."""
        return tf.zeros([0], tf.int32), tf.zeros([0, 0], tf.float32)

    def extra_from_rows(self, row_numbers, rows):
        """The summed extra contribution of the clients whose :meth:`client_rows` are
        ``row_numbers``, ``rows`` (a zero scalar here: nothing else is contributed)."""
        return tf.zeros([], tf.float32)

    def _server_transform(self, group_means, extra_sum, counts):
        """Post-processing of the per-group means before weighting (identity here)."""
        return group_means
