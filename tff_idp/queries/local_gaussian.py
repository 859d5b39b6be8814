"""Local-DP Gaussian aggregation (paper 002, MS-PAFL): every client clips what it sends to C
(eq. 11; MS-PAFL sends the public part of its *model*) and adds its own N(0, sigma^2) per
coordinate with the *full* sigma (eq. 12: local DP, so each upload is private on its own, not
only their sum); the server averages the uploads over nu |X^t|, nu = 1 - prod_i (1 - p_i) the
probability that anyone checks in and |X^t| the realised count (eq. 13).

Same client arithmetic as :class:`~tff_idp.queries.group_gaussian.GroupGaussianQuery` (one
implementation for the TFF and the fast backend) with two changes: the noise share is the
full sigma (not sigma / sqrt(k)), and a group's mean divides by nu times the realised count
(not the expected cohort). One group; no top-k; the server cannot draw the noise (local DP).
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from .group_gaussian import GroupGaussianQuery


class LocalGaussianQuery(GroupGaussianQuery):
    """Args: ``clip`` C, ``noise_stddev`` sigma (each client's), ``expected_cohort`` p N
    (for the state only), ``checkin_normaliser`` nu (002 eq. 13).

    A round nobody checked in to releases nothing and keeps the model (002 Alg. 1): each
    upload is private on its own (local DP), and the guarantee that covers MS-PAFL
    (``methods.mspafl``) composes a client's own uploads, not the check-in's secrecy."""

    noise_in_empty_rounds = False

    def __init__(self, clip: float, noise_stddev: float, expected_cohort: float,
                 checkin_normaliser: float):
        if not 0 < checkin_normaliser <= 1:
            raise ValueError(f"checkin_normaliser={checkin_normaliser!r} must be in (0, 1]")
        super().__init__([clip], [noise_stddev], [expected_cohort], [1.0], [1.0],
                         noise_draw="client")
        self._params.update(checkin_normaliser=np.float32(checkin_normaliser))

    def _noise_share(self, groups, state, counts):
        """Each client's own N(0, sigma^2) (002 eq. 12), whatever the cohort size."""
        return tf.linalg.matvec(groups, state["noise_stddevs"])

    def _denominator(self, state, counts, g):
        """nu |X^t| (002 eq. 13) with the realised count."""
        return state["checkin_normaliser"] * tf.maximum(counts[g], 1.0)
