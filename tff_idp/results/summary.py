"""``summary.json``: what a finished run reports, as one typed record. The round loop
(``engine/loop.py``) fills it in; the report, the API, the harness and the run table read it
back with :meth:`RunSummary.from_dict`, which checks what they print from (a summary that
fails is a ``ValueError`` naming the key). The nested records (``plan``, ``privacy``,
``personal``, ``audit``, ``segments``) stay JSON objects: each has its writer's docstring
(``plan_summary``, ``Method.privacy_summary``, ``audit.report``, ``segments.upto``)."""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, List, Optional

# written even when None (a reader can tell "not measured" from "written before the key
# existed"); every other optional key is left out when None
ALWAYS = ("method", "backend", "backend_mode", "final_test_accuracy", "final_test_loss",
          "headline_metric", "test_examples", "rounds", "resumed_from_round", "seconds_total",
          "seconds_per_round_after_first", "seconds_eval", "seconds_setup", "seconds_wall",
          "plan", "machine", "privacy")
OBJECTS = ("plan", "privacy", "personal", "audit")
REQUIRED = ("final_test_accuracy", "seconds_total")


@dataclasses.dataclass
class RunSummary:
    """One run's summary, fields in the order summary.json lists them."""
    method: str = ""
    backend: str = ""
    backend_mode: str = ""              # the fast backend's "cohort" or "per_client"
    # the fast backend's Dense kernels trained in the low-rank form by the process that
    # finished the run (weight tensor indices; engine.low_rank, fast_dense_updates): None
    # where none was, or in a run made before the key existed
    low_rank_kernels: Optional[List[int]] = None
    final_test_accuracy: float = math.nan    # the headline metric at the last round
    final_test_loss: Optional[float] = None
    headline_metric: str = "test_accuracy"   # personal_test_accuracy for personalised ones
    final_client_test_accuracy: Optional[float] = None       # a global model, own classes
    final_client_test_accuracy_std: Optional[float] = None
    test_examples: Optional[int] = None
    curve_test_examples: Optional[int] = None    # the per-round curve's subset
    rounds: int = 0
    resumed_from_round: Optional[int] = None
    seconds_total: float = math.nan     # training, every round (each timed where it ran)
    seconds_per_round_after_first: Optional[float] = None
    seconds_eval: Optional[float] = None
    seconds_setup: Optional[float] = None
    seconds_wall: Optional[float] = None     # training + evaluation + the last set-up
    plan: Dict[str, Any] = dataclasses.field(default_factory=dict)
    machine: Optional[Dict[str, Any]] = None
    data_note: Optional[str] = None
    extras: Dict[str, Any] = dataclasses.field(default_factory=dict)   # Method.summary_extras
    personal: Optional[Dict[str, Any]] = None
    privacy: Dict[str, Any] = dataclasses.field(default_factory=dict)
    final_test_accuracy_std: Optional[float] = None      # over clients (personalised)
    evaluation: Optional[str] = None
    best_validation_round: Optional[int] = None          # paper 001's protocol
    best_validation_accuracy: Optional[float] = None
    reported_test_accuracy: Optional[float] = None
    reported: Optional[str] = None
    peak_memory_bytes: Optional[int] = None
    peak_memory_scope: Optional[str] = None              # "run" or "process"
    segments: Optional[List[Dict[str, Any]]] = None      # which process trained which rounds
    audit: Optional[Dict[str, Any]] = None               # the canary audit (docs/audit.md)
    # the folder holds files.sha256 (results.manifest); None in runs made before it
    manifest: Optional[bool] = None

    @property
    def reported_accuracy(self) -> float:
        """The accuracy tables report: at the round of best validation when the run had a
        validation split (paper 001's protocol), else the final one."""
        return float(self.final_test_accuracy if self.reported_test_accuracy is None
                     else self.reported_test_accuracy)

    @property
    def groups(self) -> Dict[str, Any]:
        """The privacy record's groups (empty for a method without per-group accounting)."""
        return self.privacy.get("groups") or {}

    @property
    def guarantee(self) -> Dict[str, Any]:
        return self.privacy.get("guarantee") or {}

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "extras":
                out.update(value)
            elif value is not None or f.name in ALWAYS:
                out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "RunSummary":
        """A summary read back; ValueError (or KeyError / TypeError) naming what is wrong:
        the reported accuracy a finite fraction, seconds finite and non-negative, the nested
        records objects. Keys it does not know are kept in ``extras``."""
        if not isinstance(d, dict):
            raise ValueError("not a JSON object")
        for key in REQUIRED:
            if key not in d:
                raise KeyError(key)
        known = {f.name for f in dataclasses.fields(cls)} - {"extras"}
        s = cls(**{k: v for k, v in d.items() if k in known},
                extras={k: v for k, v in d.items() if k not in known})
        fraction(s.reported_accuracy, "the accuracy")
        seconds = float(s.seconds_total)
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ValueError(f"seconds_total is {s.seconds_total!r}")
        if s.seconds_wall is not None:
            float(s.seconds_setup), float(s.seconds_eval)
        for key in OBJECTS:
            if key in d and not isinstance(d[key], dict):
                raise ValueError(f"{key} is not an object")
        if "groups" in s.privacy and not isinstance(s.privacy["groups"], dict):
            raise ValueError("privacy.groups is not an object")
        return s


def fraction(value, what: str) -> float:
    """``value`` as a float, or ValueError when it is not a finite fraction in [0, 1]."""
    v = float(value)
    if not (math.isfinite(v) and 0.0 <= v <= 1.0):
        raise ValueError(f"{what} is {value!r}, not a fraction in [0, 1]")
    return v
