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


# each planner once, under the method it is named for (``plan_<method>``; FedRep's and paper
# 001's methods reuse P-FedAvg's and DP-FedAvg's; MS-PAFL's plan is its ``plan`` method)
PLANNERS = {m.name: m.planner for m in METHODS.values()
            if m.planner is not None and m.planner.__name__ == f"plan_{m.name}"}


# the names the papers print (plots and figure legends; configs use the registry keys)
PAPER_NAMES = {
    "p_fedavg": "P-FedAvg", "dp_fedavg": "DP-FedAvg", "gdpfed": "GDPFed",
    "gdpfed_opc": "GDPFed-opc", "gdpfed_plus": "GDPFed+", "idp_sample": "IDP-FedAvg (SAMPLE)",
    "idp_scale": "IDP-FedAvg (SCALE)", "idp_fedavg": "IDP-FedAvg", "pfa": "PFA",
    "fedrep": "FedRep", "dp_fedrep": "DP-FedRep", "ms_pafl": "MS-PAFL",
    "ldp_fedavg": "LDP-FedAvg", "centaur": "CENTAUR", "dp_pfeddsu": "DP-pFedDSU",
    "dp_fedavg_fb": "DP-FedAvg-fb", "pmtl_ft": "PMTL-FT", "ppsgd": "PPSGD"}


def get(name: str) -> Method:
    return METHODS[name]


def paper_name(name: str) -> str:
    """A method's name as its paper prints it (the registry key when there is none)."""
    return PAPER_NAMES.get(name, name)


__all__ = ["METHODS", "PAPER_NAMES", "PLANNERS", "Method", "Phase", "get", "paper_name"]
