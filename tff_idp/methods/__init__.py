"""Methods as plug-ins (:mod:`tff_idp.methods.base`): the registry the config, the round loop
and the backends read. A new method is a module with a :class:`Method` subclass and a line
here; no runner changes."""
from __future__ import annotations

from typing import Dict

from .base import Method, Phase
from .fedrep import DPFedRep, FedRep
from .gdpfed import DPFedAvg, GDPFed, GDPFedOpc, GDPFedPlus, PFedAvg
from .idp import IDPFedAvg, IDPSample, IDPScale
from .mspafl import LDPFedAvg, MSPAFL
from .pfa import PFA
from .pfeddsu import METHODS as PAPER001

METHODS: Dict[str, Method] = {m.name: m for m in (
    PFedAvg(), DPFedAvg(), GDPFed(), GDPFedOpc(), GDPFedPlus(), IDPSample(), IDPScale(),
    IDPFedAvg(), PFA(), FedRep(), DPFedRep(), MSPAFL(), LDPFedAvg()) + PAPER001}


def get(name: str) -> Method:
    return METHODS[name]


__all__ = ["METHODS", "Method", "Phase", "get"]
