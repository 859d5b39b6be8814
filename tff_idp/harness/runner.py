"""Run a table's units: skip the complete ones, run the rest one after another or in N
worker processes, show overall progress, then write the report.

A unit is complete when its results folder exists (``summary.json`` inside; a folder is
renamed into place only when complete) and was made with the unit's config (the run
fingerprint in its config.json; see :func:`unit_complete`). A unit that fails leaves ``FAILED.txt`` with its
traceback in its ``.partial`` folder; the others go on, and the exit status is 1.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import List, Optional

from tqdm.auto import tqdm

from ..atomic import FolderLocked
from ..results import is_complete
from .table import TableSpec, Unit, expand

FAILED = "FAILED.txt"


def run_unit(unit: Unit, progress: bool = False) -> dict:
    """Train one unit into its folder (resuming from its checkpoint if one is there)."""
    import tensorflow as tf
    from ..engine.experiment import prepare
    from ..engine.persist import train_to_folder
    from ..runtime import select_device
    started = time.perf_counter()                  # the summary's set-up includes the data
    exp = prepare(unit.cfg)
    with tf.device(select_device(unit.cfg.device)):      # the table's device (None: TF's choice)
        return train_to_folder(exp, unit.method, unit.folder, progress=progress,
                               started=started)


def run_unit_recording_failure(unit: Unit, progress: bool = False) -> Optional[str]:
    """Run a unit; on an exception write ``FAILED.txt`` into its partial folder and return
    the last line of the error (None on success)."""
    partial = unit.folder.with_name(unit.folder.name + ".partial")
    try:
        run_unit(unit, progress)
        return None
    except FolderLocked as e:         # another process runs it: its folder is not ours
        return f"{unit.label}: {e}"
    except Exception as e:  # noqa: BLE001 (one failing cell must not stop the table)
        partial.mkdir(parents=True, exist_ok=True)
        (partial / FAILED).write_text(traceback.format_exc())
        return f"{unit.label}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def unit_complete(unit: Unit) -> bool:
    """Its folder is complete, every file parses, metrics.csv has every round, and it was
    made with this unit's config (a folder left by an earlier, different definition of the
    cell, e.g. another scale setting, is stale; ``engine.persist.complete_run``)."""
    if not is_complete(unit.folder):
        return False
    from ..engine.persist import complete_run
    return complete_run(unit.folder, unit.cfg, unit.method) is not None


def pending(units: List[Unit]) -> List[Unit]:
    return [u for u in units if not unit_complete(u)]


def task_command(spec: TableSpec, scale: str, index: int, output_dir: Optional[str]) -> list:
    cmd = [sys.executable, "-m", "tff_idp.harness.task", str(spec.path), "--scale", scale,
           "--index", str(index)]
    if output_dir:
        cmd += ["--output-dir", output_dir]
    return cmd


def run_table(spec: TableSpec, scale: str, jobs: int = 1, output_dir: Optional[str] = None,
              progress: bool = True) -> int:
    """Run what is missing of a table at ``scale`` (a run another table already made with the
    same config is copied: ``harness.reuse``); returns the number of failed units."""
    from .reuse import reuse_equal_runs
    units = expand(spec, scale, output_dir)
    reuse_equal_runs(spec, scale, pending(units), output_dir)
    todo = pending(units)
    print(f"{spec.name} at scale {scale}: {len(units)} runs, {len(units) - len(todo)} "
          f"complete, {len(todo)} to run" + (f" in {jobs} processes" if jobs > 1 and todo
                                              else ""), file=sys.stderr)
    failures: List[str] = []
    started = time.perf_counter()
    bar = tqdm(total=len(todo), desc=spec.name, unit="run", disable=not progress)
    if jobs <= 1:
        from ..runtime import close_tff
        try:
            for unit in todo:
                bar.set_postfix_str(unit.label)
                err = run_unit_recording_failure(unit)
                if err:
                    failures.append(err)
                bar.update()
        finally:
            close_tff()
    else:
        # a task finds its unit by index in the whole table (``spec`` may be restricted
        # to some data sets by --only)
        from .table import load_table
        index = {u.label: i for i, u in enumerate(expand(load_table(spec.path), scale,
                                                         output_dir))}
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
        env.setdefault("OMP_NUM_THREADS", "1")

        def launch(unit):
            proc = subprocess.run(task_command(spec, scale, index[unit.label], output_dir),
                                  capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                tail = [l for l in proc.stderr.splitlines() if l.strip()][-1:] or ["?"]
                return f"{unit.label}: {tail[0]}"
            return None

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(launch, u): u for u in todo}
            for fut in as_completed(futures):
                err = fut.result()
                if err:
                    failures.append(err)
                bar.update()
    bar.close()
    if todo:
        print(f"{spec.name}: ran {len(todo)} runs in {time.perf_counter() - started:.0f} s",
              file=sys.stderr)
    for f in failures:
        print(f"failed: {f}", file=sys.stderr)
    return len(failures)


def folder_state(unit: Unit) -> str:
    """'done', 'stale' (complete but made with another config), 'failed', 'running' (a
    heartbeat or a file of the partial folder within the last 10 minutes, or within three of
    its rounds when rounds are longer), 'stalled' (none for longer) or 'pending'."""
    if unit_complete(unit):
        return "done"
    if is_complete(unit.folder):
        return "stale"
    partial = unit.folder.with_name(unit.folder.name + ".partial")
    if not partial.exists():
        return "pending"
    if (partial / FAILED).exists():
        return "failed"
    latest = max([p.stat().st_mtime for p in partial.iterdir()] + [partial.stat().st_mtime])
    window = 600.0
    try:                              # written every round (engine.loop.write_heartbeat)
        beat = json.loads((partial / "heartbeat.json").read_text())
        latest = max(latest, float(beat["time"]))
        window = max(window, 3.0 * float(beat["round_seconds"]) + 60.0)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return "running" if time.time() - latest < window else "stalled"


def units_by_state(units: List[Unit]) -> dict:
    out = {}
    for u in units:
        out.setdefault(folder_state(u), []).append(u)
    return out


def write_units_list(units: List[Unit], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{i}\t{u.label}\t{u.folder}\n" for i, u in enumerate(units)))
