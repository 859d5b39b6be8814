"""How every unit of a table shrinks at a ``--scale``: smoke (wiring on 2 CPU cores in
minutes, on synthetic stand-ins of the real sets' shapes), laptop (the real data, fewer
rounds and clients) and paper (as written). ``harness.table.expand`` applies it to each
unit's values before they are validated."""
from __future__ import annotations

from typing import Optional

from ..config import ConfigError
from ..experiment_config import ExperimentConfig
from ..data.synthetic import PREFIX as SYNTHETIC, SHAPES as SYNTHETIC_SHAPES

# data sets the smoke scale runs for real (shipped offline); the rest become stand-ins
OFFLINE = {"digits", "adult-standin"}

# each scale's caps (module docstring)
SCALES = {
    "smoke": dict(rounds=2, num_clients=60, min_cohort=6, local_steps=1, local_epochs=1,
                  batch_size=8, test_examples=200, seeds=1, synthetic=True),
    "laptop": dict(rounds=20, num_clients=600, min_cohort=20, local_steps=None,
                   local_epochs=2, batch_size=None, test_examples=2000, seeds=None,
                   synthetic=False),
    "paper": {},
}


SCALE_CHOICES = ("smoke (synthetic stand-ins of the data, 2 rounds, 60 clients: minutes), "
                 "laptop (the real data, 20 rounds, 600 clients: tens of minutes a run), "
                 "paper (the paper's settings: hours a run on a CPU)")


def require_scale(scale: Optional[str]) -> str:
    """A table run's ``--scale``, which has no default: paper scale by accident costs hours."""
    if scale is None:
        raise ConfigError(f"--scale: required for a table config; choose {SCALE_CHOICES}")
    return scale.lower() if scale.lower() in SCALES else scale     # --scale Paper


def _has_personal_phase(get) -> bool:
    """Whether a unit's methods train a personal part in a phase of its own (FedRep)."""
    from ..methods import METHODS
    return any(len(METHODS[m].phases(_PhaseKeys(get))) > 1 for m in get("methods"))


def _fine_tunes_heads(get) -> bool:
    """Whether a unit's methods fine-tune a read-out (paper 001: ``head_epochs``)."""
    from ..methods import METHODS
    keys = _PhaseKeys(get)
    return any(any(ph.on_features for ph in METHODS[m].phases(keys))
               or METHODS[m].evaluation(keys) is not None for m in get("methods"))


class _PhaseKeys:
    """The config keys ``Method.phases`` reads, from a unit's values."""

    def __init__(self, get):
        self._get = get

    def __getattr__(self, key):
        return self._get(key)


def scale_values(values: dict, scale: str) -> dict:
    """A unit's config values shrunk to ``scale``: rounds, clients, local work and test
    set capped; the expected rate raised so the expected cohort stays >= min_cohort; at
    smoke, a data set that is not shipped offline becomes its synthetic stand-in (natural
    clients then become an IID split), except Fashion-MNIST when its files are staged."""
    s = SCALES[scale]
    if not s:
        return dict(values)
    v = dict(values)
    defaults = ExperimentConfig()

    def get(k):
        return v.get(k, getattr(defaults, k))

    v["rounds"] = min(get("rounds"), s["rounds"])
    n = min(get("num_clients"), s["num_clients"])
    v["num_clients"] = n
    v["expected_rate"] = min(1.0, max(get("expected_rate"), s["min_cohort"] / n))
    if v.get("rates") is not None:
        v.pop("rates")               # fixed per-group rates are for the paper's n
    if s["local_steps"] is not None:
        v["local_steps"] = min(get("local_steps"), s["local_steps"])
    if get("local_epochs") is not None:
        v["local_epochs"] = min(get("local_epochs"), s["local_epochs"])
    if _has_personal_phase(get):          # the personal phase's work is capped alike
        if s["local_steps"] is not None:
            v["personal_steps"] = min(get("personal_steps"), s["local_steps"])
        if get("personal_epochs") is not None:
            v["personal_epochs"] = min(get("personal_epochs"), s["local_epochs"])
    if _fine_tunes_heads(get) and s["local_epochs"] is not None:   # 15 epochs each round
        v["head_epochs"] = min(get("head_epochs"), s["local_epochs"])
        v["ppsgd_head_epochs"] = min(get("ppsgd_head_epochs"), s["local_epochs"])
    if s["batch_size"] is not None:
        v["batch_size"] = min(get("batch_size"), s["batch_size"])
    current = get("test_examples")
    v["test_examples"] = s["test_examples"] if current is None else min(current,
                                                                        s["test_examples"])
    if s["synthetic"] and get("dataset") not in OFFLINE and not _real_here(get):
        if get("dataset") in SYNTHETIC_SHAPES:
            v["dataset"] = SYNTHETIC + get("dataset")
            if get("partition") == "natural":
                v["partition"] = "iid"
    return v


def _real_here(get) -> bool:
    """Fashion-MNIST is used for real at smoke scale when its IDX files are staged (they can
    be had offline: ``python -m tff_idp.data fetch fashion_mnist``)."""
    if get("dataset") != "fashion_mnist":
        return False
    from ..data import fashion_mnist
    return fashion_mnist.present(get("data_root"))
