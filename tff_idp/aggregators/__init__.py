"""TFF aggregation factories for client-level DP with privacy groups."""
from .group_gaussian import GroupGaussianFactory
from .pfa import PFAFactory, PFAProjection, principal_directions

__all__ = ["GroupGaussianFactory", "PFAFactory", "PFAProjection", "principal_directions"]
