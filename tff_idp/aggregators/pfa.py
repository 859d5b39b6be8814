"""PFA (Liu et al., VLDB 2021) in GDPFed's adaptation as a TFF factory: the arithmetic is
:class:`~tff_idp.queries.pfa.PFAQuery`'s (its module docstring: the projection, the public
rows); the factory needs each client's ``slot``, its row among the round's public clients.
"""
from __future__ import annotations

from ..queries.pfa import PFAProjection, PFAQuery, principal_directions  # noqa: F401
from .group_gaussian import GroupGaussianFactory


class PFAFactory(GroupGaussianFactory):
    """:class:`GroupGaussianFactory` on :class:`~tff_idp.queries.pfa.PFAQuery` (same
    arguments: what is projected is a :class:`PFAProjection`)."""

    QUERY = PFAQuery

    def create(self, value_type):
        if not hasattr(value_type, "slot"):
            raise TypeError(f"PFAFactory needs a 'slot' per client; got {value_type}")
        return super().create(value_type)
