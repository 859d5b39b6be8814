"""One method of an experiment, trained into its results folder, resumably.

The folder is written as ``<folder>.partial/`` (checkpoints live there while the run is
going) and renamed to ``<folder>/`` when config.json, metrics.csv, ledger.csv and
summary.json are all written: a folder without the suffix is always complete, and a killed
run restarted with the same config resumes from the ``.partial`` folder's checkpoint.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from ..results import RunFolder, write_csv, write_json
from .experiment import Experiment
from .loop import CHECKPOINT, run_fingerprint, run_method


def train_to_folder(exp: Experiment, method: str, folder: Path, progress: bool = True) -> dict:
    cfg = exp.cfg
    with RunFolder(folder, keep_partial=True) as tmp:
        rows, summary, ledger = run_method(exp, method, progress=progress, checkpoint_dir=tmp)
        write_json(tmp / "config.json", dataclasses.asdict(cfg) | {
            "resolved_delta": cfg.resolved_delta, "method": method,
            "fingerprint": run_fingerprint(cfg, method),
            "plan": exp.plans[method].describe()})
        write_csv(tmp / "metrics.csv", rows)
        write_csv(tmp / "ledger.csv", list(ledger.client_rows()))
        write_json(tmp / "summary.json", summary)
        (tmp / CHECKPOINT).unlink(missing_ok=True)
    return summary
