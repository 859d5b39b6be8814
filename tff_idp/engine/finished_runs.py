"""A finished run read back from its results folder: whether it is complete and this
config's (every file parses, the fingerprints match, every round is there, every file has
its digest), or another config's. Reading needs no TensorFlow, so a report drawn from
finished runs (``python -m tff_idp.report``, ``harness.reuse``) never starts it; writing
the folder is ``engine.persist``'s."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Optional

from ..atomic import regular_file
from ..results import RunSummary
from ..results.manifest import manifest_problem
from .fingerprint import run_fingerprint


def complete_run(folder: Path, cfg, method: str) -> Optional[RunSummary]:
    """The summary of a finished run of ``method`` under ``cfg`` in ``folder``, or None when
    there is none to trust: every file must parse, the config's fingerprint must be this
    run's (stored, and recomputed from config.json's content), metrics.csv must hold
    ``cfg.rounds`` rows, the last round's accuracy a finite number and every file its
    digest in files.sha256 (a truncated, foreign, edited or damaged file means the run is
    done again)."""
    folder = Path(folder)
    try:
        made = json.loads(regular_file(folder / "config.json").read_text())
        summary = RunSummary.from_dict(
            json.loads(regular_file(folder / "summary.json").read_text()))
        with open(regular_file(folder / "metrics.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        with open(regular_file(folder / "ledger.csv"), newline="") as f:
            list(csv.reader(f))
    except (OSError, ValueError, KeyError, TypeError, csv.Error):
        return None
    if manifest_problem(folder, bool(summary.manifest)) is not None:
        return None                    # a file changed after the run (results.manifest)
    if not isinstance(made, dict) or made.get("fingerprint") != run_fingerprint(cfg, method):
        return None
    if "method" in made and made_fingerprint(made) != made["fingerprint"]:
        return None                    # config.json (a whole config) edited since the run
    if len(rows) != cfg.rounds or any(None in r.values() for r in rows):
        return None
    if not _finite_result(rows[-1], summary):               # a NaN where a number must be
        return None
    return summary


def made_fingerprint(made: dict) -> Optional[str]:
    """The fingerprint of the config config.json holds, recomputed (the stored one alone
    would vouch for a config edited after the run); None when it no longer parses."""
    from ..config import ConfigError
    from ..experiment_config import KEYS, from_mapping
    try:
        cfg = from_mapping({k: v for k, v in made.items() if k in KEYS})
        return run_fingerprint(cfg, made.get("method", ""))
    except (ConfigError, KeyError, TypeError, ValueError):
        return None


def _finite_result(last: dict, summary: RunSummary) -> bool:
    """The last round's accuracy (the global or the personalised one, whichever the run
    evaluates) and the summary's are finite numbers: an accuracy is never NaN, so a NaN
    there is a damaged file."""
    import math
    values = [last[k] for k in ("test_accuracy", "personal_test_accuracy")
              if last.get(k) not in (None, "")]
    try:
        return bool(values) and all(math.isfinite(float(v)) for v in values) and \
            math.isfinite(float(summary.final_test_accuracy))
    except (TypeError, ValueError):
        return False


def foreign_run(folder: Path, cfg, method: str) -> Optional[str]:
    """The fingerprint of a finished run of another config in ``folder`` (a different config
    saved under the same ``name``), or None when the folder is absent, unreadable or this
    config's own."""
    try:
        made = json.loads(regular_file(Path(folder) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    theirs = made.get("fingerprint") if isinstance(made, dict) else None
    if theirs is None or theirs == run_fingerprint(cfg, method):
        return None
    return str(theirs)
