"""TFF aggregation factories for client-level DP with privacy groups."""
from .group_gaussian import GroupGaussianFactory
from .pfa import PFAFactory, principal_directions

__all__ = ["GroupGaussianFactory", "PFAFactory", "principal_directions"]
