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

import dataclasses
from pathlib import Path
from typing import Optional

from ..atomic import FolderLock, atomic_savefig
from ..privacy.threat_model import (OBSERVERS_JSON, SERVER_COLUMNS, SERVER_CSV,
                                     run_folder_observers)
from ..results import RunFolder, RunSummary, write_csv, write_json
from ..results.manifest import MANIFEST, write_manifest
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
