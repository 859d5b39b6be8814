"""One method of an experiment, trained into its results folder, resumably.

The folder holds config.json, metrics.csv (the per-round curve), server.csv (the realised
cohort sizes, which only the server may see), ledger.csv, summary.json and observers.json
(who may see each file and column: ``privacy.threat_model.run_folder_observers``). It is
written as ``<folder>.partial/`` (checkpoints live there while the run is
going) and renamed to ``<folder>/`` when config.json, metrics.csv, ledger.csv and
summary.json are all written: a folder without the suffix is always complete, and a killed
run restarted with the same config resumes from the ``.partial`` folder's checkpoint.
"""
from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Optional

from ..atomic import FolderLock, atomic_savefig, regular_file
from ..privacy.threat_model import (OBSERVERS_JSON, SERVER_COLUMNS, SERVER_CSV,
                                     run_folder_observers)
from ..results import RunFolder, RunSummary, write_csv, write_json
from ..results.manifest import MANIFEST, manifest_problem, write_manifest
from .experiment import Experiment
from .checkpoint import CHECKPOINT, HEARTBEAT, ROWS
from .fingerprint import run_fingerprint
from .loop import run_method


def split_rows(rows):
    """A run's per-round rows as (metrics.csv's: what the released curve may show,
    server.csv's: the round and what only the server sees, the realised cohort sizes;
    ``privacy.threat_model.SERVER_COLUMNS``)."""
    released = [{k: v for k, v in r.items() if k not in SERVER_COLUMNS} for r in rows]
    server = [{"round": r["round"], **{k: r[k] for k in SERVER_COLUMNS if k in r}}
              for r in rows]
    return released, server


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


def write_canaries(folder: Path, scores: dict, method: str) -> None:
    """``canaries.csv`` (canary, inserted, rounds taken part in, each observer's score) and ``canaries.png`` (the
    scores of inserted and never inserted canaries, one panel per observer)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    inserted = np.asarray(scores["inserted"], bool)
    write_csv(folder / "canaries.csv", [
        {"canary": j, "inserted": int(inserted[j]),
         "participations": int(scores["participations"][j]), "final_model": scores["final_model"][j],
         "every_round": scores["every_round"][j]} for j in range(len(inserted))])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, key, title in zip(axes, ("final_model", "every_round"),
                              ("final model (w_T - w_0)", "every round (max over rounds)")):
        values = np.asarray(scores[key])
        bins = np.linspace(values.min(), values.max(), 40)
        ax.hist(values[inserted], bins, alpha=0.6, label=f"inserted ({inserted.sum()})")
        ax.hist(values[~inserted], bins, alpha=0.6, label=f"never inserted ({(~inserted).sum()})")
        ax.set_title(f"{method}: {title}", fontsize=10)
        ax.set_xlabel("cosine of the model change with the canary's direction")
        ax.set_ylabel("canaries")
        ax.legend(fontsize=8)
    fig.tight_layout()
    atomic_savefig(fig, folder / "canaries.png", dpi=110)
    plt.close(fig)


def train_to_folder(exp: Experiment, method: str, folder: Path, progress: bool = True,
                    started: Optional[float] = None) -> RunSummary:
    cfg = exp.cfg
    with FolderLock(folder), RunFolder(folder, keep_partial=True) as tmp:
        rows, summary, ledger = run_method(exp, method, progress=progress, checkpoint_dir=tmp,
                                           started=started)
        write_json(tmp / "config.json", dataclasses.asdict(cfg) | {
            "resolved_delta": cfg.resolved_delta, "method": method,
            "fingerprint": run_fingerprint(cfg, method),
            "plan": exp.plans[method].describe()})
        released, server = split_rows(rows)
        write_csv(tmp / "metrics.csv", released)
        write_csv(tmp / SERVER_CSV, server)
        write_csv(tmp / "ledger.csv", list(ledger.client_rows()))
        write_json(tmp / OBSERVERS_JSON, run_folder_observers(
            list(released[0]) if released else [], list(server[0]) if server else [],
            summary.audit is not None))
        if summary.audit is not None:   # per-canary scores: a CSV and a histogram, not JSON
            write_canaries(tmp, summary.audit.pop("canary_scores"), method)
        summary.manifest = True
        write_json(tmp / "summary.json", summary.to_dict())
        (tmp / CHECKPOINT).unlink(missing_ok=True)
        (tmp / ROWS).unlink(missing_ok=True)
        (tmp / HEARTBEAT).unlink(missing_ok=True)
        write_manifest(tmp, [p.name for p in tmp.iterdir() if p.is_file() and not
                             p.is_symlink() and p.name != MANIFEST and p.suffix != ".bad"])
    return summary
