"""Local-DP Gaussian aggregation (paper 002, MS-PAFL) as a TFF factory: the arithmetic is
:class:`~tff_idp.queries.local_gaussian.LocalGaussianQuery`'s (its module docstring)."""
from __future__ import annotations

from ..queries.local_gaussian import LocalGaussianQuery
from .group_gaussian import GroupGaussianFactory


class LocalGaussianFactory(GroupGaussianFactory):
    """:class:`GroupGaussianFactory` on :class:`~tff_idp.queries.local_gaussian.
    LocalGaussianQuery` (same arguments: clip, noise_stddev, expected_cohort,
    checkin_normaliser)."""

    QUERY = LocalGaussianQuery
