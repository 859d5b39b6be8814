"""The DP mechanisms as queries: their state and a round's arithmetic in TensorFlow, without
TFF (``tff_idp.aggregators`` wraps each as a TFF factory; the fast backend calls them)."""
from .group_gaussian import AdaptiveClipping, GroupGaussianQuery
from .local_gaussian import LocalGaussianQuery
from .pfa import PFAProjection, PFAQuery, principal_directions

__all__ = ["AdaptiveClipping", "GroupGaussianQuery", "LocalGaussianQuery", "PFAProjection", "PFAQuery",
           "principal_directions"]
