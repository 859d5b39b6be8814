"""TFF aggregation factories for client-level DP with privacy groups."""
from .group_gaussian import GroupGaussianFactory
from .local_gaussian import LocalGaussianFactory
from .pfa import PFAFactory, PFAProjection, principal_directions

FACTORIES = (GroupGaussianFactory, PFAFactory, LocalGaussianFactory)


def factory_of(query, record_aggregation_factory=None, client_diagnostics=False):
    """The TFF factory that places ``query`` (a query of ``tff_idp.queries`` built whole):
    the one whose ``QUERY`` is its type, with the caller's record sum and diagnostics."""
    for factory in FACTORIES:
        if type(query) is factory.QUERY:
            return factory(query=query, record_aggregation_factory=record_aggregation_factory,
                           client_diagnostics=client_diagnostics)
    raise TypeError(f"no aggregation factory places a {type(query).__name__}")


__all__ = ["FACTORIES", "GroupGaussianFactory", "LocalGaussianFactory", "PFAFactory",
           "PFAProjection", "factory_of", "principal_directions"]
