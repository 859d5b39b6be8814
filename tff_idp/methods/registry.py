"""The registry of methods: the suite's own (one line each below) and those other installed
packages register in the ``tff_idp.methods`` entry-point group (:func:`_load_plugins`); the
planners, the printed names, the config keys the methods own (:data:`CONFIG_KEYS`), and
the lookups the config, the round loop and the reports use. Faced by :mod:`tff_idp.methods`."""
from __future__ import annotations

import dataclasses
import re
from typing import Dict

from ..config import CoreConfig
from ..config_keys import ConfigKey, merged
from .base import Method
from .fedrep import DPFedRep, FedRep
from .gdpfed import DPFedAvg, GDPFed, GDPFedOpc, GDPFedPlus, PFedAvg
from .idp import IDPFedAvg, IDPSample, IDPScale
from .mspafl import LDPFedAvg, MSPAFL
from .pfa import PFA
from .pfeddsu import METHODS as PAPER001

METHODS: Dict[str, Method] = {m.name: m for m in (
    PFedAvg(), DPFedAvg(), GDPFed(), GDPFedOpc(), GDPFedPlus(), IDPSample(), IDPScale(),
    IDPFedAvg(), PFA(), FedRep(), DPFedRep(), MSPAFL(), LDPFedAvg()) + PAPER001}


CORE_KEYS = frozenset(f.name for f in dataclasses.fields(CoreConfig))


def _own_keys(methods) -> Dict[str, ConfigKey]:
    """{name: ConfigKey} of the config keys ``methods`` own (``Method.config_keys``), each
    declared once or identically; none may be a core key (ValueError naming it)."""
    for m in methods:
        core = [k.name for k in m.config_keys if k.name in CORE_KEYS]
        if core:
            raise ValueError(f"config key {core[0]!r} of method {m.name!r} is a core key")
    return merged((f"method {m.name!r}", m.config_keys) for m in methods)


# every registered method's own config keys, which join the core keys in the flat TOML
# (``tff_idp.experiment_config``); plug-ins' are added as they load
CONFIG_KEYS: Dict[str, ConfigKey] = _own_keys(METHODS.values())


ENTRY_POINTS = "tff_idp.methods"      # the entry-point group other packages register in
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


class PluginError(ValueError):
    """A registration that is not a usable method (one line naming the entry point)."""


# entry points of other packages that are not usable methods: name -> why (one line);
# ``--list`` shows them and a config that names one is refused with it
BROKEN_PLUGINS: Dict[str, str] = {}


def _where(entry) -> str:
    return f"{ENTRY_POINTS} entry point {entry.name}={entry.value}"


def _check_plugin(entry, method) -> Method:
    """A registered method, instantiated and checked: a :class:`Method` whose ``name`` is the
    entry point's, a new one, with a summary and a planner (:class:`PluginError`)."""
    where = _where(entry)
    if isinstance(method, type) and issubclass(method, Method):
        method = method()
    if not isinstance(method, Method):
        raise PluginError(f"{where}: is not a tff_idp.methods.Method (got "
                          f"{type(method).__name__})")
    if method.name != entry.name or not _NAME.match(method.name):
        raise PluginError(f"{where}: its name {method.name!r} must be the entry point's and "
                          "lower_snake_case")
    if method.name in METHODS:
        raise PluginError(f"{where}: {method.name!r} is already a method")
    if not method.summary or method.planner is None:
        raise PluginError(f"{where}: a method needs a summary and a planner")
    try:
        _own_keys(list(METHODS.values()) + [method])
    except ValueError as e:
        raise PluginError(f"{where}: {e}") from None
    return method


def _load_plugins() -> None:
    """Add the methods other installed packages register (module docstring); one that
    cannot be loaded or is not a usable method goes to :data:`BROKEN_PLUGINS` instead, so
    that it stops only the configs that name it."""
    from importlib.metadata import entry_points
    for entry in sorted(entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        try:
            method = _check_plugin(entry, entry.load())
        except PluginError as e:
            BROKEN_PLUGINS[entry.name] = str(e)
            continue
        except Exception as e:  # noqa: BLE001 (a plug-in's import can fail any way)
            BROKEN_PLUGINS[entry.name] = (f"{_where(entry)}: {type(e).__name__}: "
                                          f"{str(e).splitlines()[0] if str(e) else ''}")
            continue
        METHODS[method.name] = method
        CONFIG_KEYS.update((key.name, key) for key in method.config_keys)   # checked above


_load_plugins()


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
    """A method's name as its paper prints it (a plug-in's ``printed_name``; the registry
    key when there is none)."""
    method = METHODS.get(name)
    return PAPER_NAMES.get(name) or getattr(method, "printed_name", "") or name
