"""TFF aggregation factories for client-level DP with privacy groups."""
from .group_gaussian import GroupGaussianFactory

__all__ = ["GroupGaussianFactory"]
