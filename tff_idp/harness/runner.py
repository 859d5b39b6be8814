"""Run a table's units: skip the complete ones, run the rest one after another or in N
worker processes, show overall progress, then write the report.

A unit is complete when its results folder exists (``summary.json`` inside; a folder is
renamed into place only when complete) and was made with the unit's config (the run
fingerprint in its config.json; see :func:`unit_complete`). A unit that fails leaves ``FAILED.txt`` with its
traceback in its ``.partial`` folder; the others go on, and the exit status is 1.
"""
from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import List, Optional

from tqdm.auto import tqdm

from ..atomic import FolderLocked, write_failure_line
from ..engine.checkpoint import read_heartbeat
from ..results import is_complete
from .failures import FAILED
from .table import TableSpec, Unit, expand, unit_complete


def run_unit(unit: Unit, progress: bool = False):
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
    partial = unit.partial
    try:
        run_unit(unit, progress)
        return None
    except FolderLocked as e:         # another process runs it: its folder is not ours
        return f"{unit.label}: {e}"
    except Exception as e:  # noqa: BLE001 (one failing cell must not stop the table)
        try:
            partial.mkdir(parents=True, exist_ok=True)
            (partial / FAILED).write_text(traceback.format_exc())
        except OSError:                   # a full disk: the line below still says why
            pass
        line = write_failure_line(e, unit.folder.parent)
        if line is not None:
            return f"{unit.label}: {line}"
        return f"{unit.label}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def pending(units: List[Unit]) -> List[Unit]:
    return [u for u in units if not unit_complete(u)]


def task_command(spec: TableSpec, scale: str, index: int, output_dir: Optional[str],
                 force: bool = False) -> list:
    cmd = [sys.executable, "-m", "tff_idp.harness.task", str(spec.path), "--scale", scale,
           "--index", str(index)] + (["--force"] if force else [])
    if output_dir:
        cmd += ["--output-dir", output_dir]
    return cmd + [a for item in spec.overrides for a in ("--set", item)]


def run_table(spec: TableSpec, scale: str, jobs: int = 1, output_dir: Optional[str] = None,
              progress: bool = True, force: bool = False) -> int:
    """Run what is missing of a table at ``scale`` (a run another table already made with the
    same config is copied: ``harness.reuse``); returns the number of failed units. ``force``:
    every unit of ``spec`` is trained again, complete or not (a new run replaces a complete
    folder only when it completes).

    A stop request (Ctrl-C, SIGTERM) stops the running units at their next round boundary
    (each checkpoints), starts no other unit, prints one line (runs done / stopped / not
    started) and exits 130 / 143 (SystemExit). Worker processes (``--jobs`` > 1) get SIGTERM
    when this process dies, however it dies (Linux's parent-death signal)."""
    from ..runtime import StopRequests
    from .reuse import reuse_equal_runs
    units = expand(spec, scale, output_dir)
    if not force:
        reuse_equal_runs(spec, scale, pending(units), output_dir)
    todo = list(units) if force else pending(units)
    complete = len(units) - len(pending(units))
    print(f"{spec.name} at scale {scale}: {len(units)} runs, {complete} complete, "
          f"{len(todo)} to run" + (" (--force: complete ones too)" if force else "") +
          (f" in {jobs} processes" if jobs > 1 and todo else ""), file=sys.stderr)
    failures: List[str] = []
    started = time.perf_counter()
    bar = tqdm(total=len(todo), desc=spec.name, unit="run", disable=not progress)
    with StopRequests() as stop:
        watch = _Watch(bar, failures, stop)
        if jobs <= 1:
            _run_in_process(todo, watch)
        else:
            _run_in_workers(spec, scale, todo, jobs, output_dir, watch, force)
    bar.close()
    if todo:
        print(f"{spec.name}: ran {len(todo)} runs in {time.perf_counter() - started:.0f} s",
              file=sys.stderr)
    for f in failures:
        print(f"failed: {f}", file=sys.stderr)
    return len(failures)


def _stop_line(spec_units: List[Unit], stopped: int, not_started: int, signum: int) -> str:
    import signal
    done = sum(unit_complete(u) for u in spec_units)
    return (f"stopped ({signal.Signals(signum).name}): {done} runs done, {stopped} stopped at "
            f"a checkpoint, {not_started} not started; run the same command to go on")


@dataclasses.dataclass
class _Watch:
    """What a table's runs are watched with: the progress bar, the failures so far (one line
    each) and the stop requests (``runtime.StopRequests``)."""
    bar: object
    failures: List[str]
    stop: object


def _run_in_process(todo: List[Unit], watch: _Watch) -> None:
    from ..runtime import close_tff
    bar, failures, stop = watch.bar, watch.failures, watch.stop
    try:
        for i, unit in enumerate(todo):
            if stop.signum is not None:
                print(_stop_line(todo, 0, len(todo) - i, stop.signum), file=sys.stderr)
                raise SystemExit(stop.exit_status)
            bar.set_postfix_str(unit.label)
            try:                                   # its round bar (with accuracy) below
                err = run_unit_recording_failure(unit, progress=not bar.disable)
            except SystemExit:                     # the unit stopped at a checkpoint
                print(_stop_line(todo, 1, len(todo) - i - 1, stop.signum or 15),
                      file=sys.stderr)
                raise
            if err:
                failures.append(err)
            bar.update()
    finally:
        close_tff()


def _run_in_workers(spec, scale, todo, jobs, output_dir, watch: _Watch,
                    force: bool = False) -> None:
    """Up to ``jobs`` ``harness.task`` processes at a time, started and watched from this
    (the main) thread: the parent-death signal is tied to the thread that forks. Each has its
    own process group, so a terminal's Ctrl-C reaches only this process, which passes one
    SIGTERM on to each."""
    import signal
    import tempfile
    from ..runtime import with_parent_death
    bar, failures, stop = watch.bar, watch.failures, watch.stop
    from .table import load_table, with_overrides
    # a task finds its unit by index in the whole table (``spec`` may be restricted to some
    # data sets by --only)
    whole = with_overrides(load_table(spec.path), spec.overrides)
    index = {u.label: i for i, u in enumerate(expand(whole, scale, output_dir))}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.setdefault("OMP_NUM_THREADS", "1")
    queue, running, stopped, told, shown = list(todo), [], 0, set(), 0.0
    try:
        while running or (queue and stop.signum is None):
            while queue and len(running) < jobs and stop.signum is None:
                unit = queue.pop(0)
                log = tempfile.TemporaryFile(mode="w+")
                proc = subprocess.Popen(
                    with_parent_death(task_command(spec, scale, index[unit.label],
                                                   output_dir, force), signal.SIGTERM),
                    env=env, stdout=subprocess.DEVNULL, stderr=log, text=True,
                    process_group=0)
                running.append((unit, proc, log))
            if stop.signum is not None:
                for _, proc, _ in running:           # each checkpoints at its next round
                    if proc.poll() is None and proc.pid not in told:
                        proc.send_signal(signal.SIGTERM)      # once: a second stops at once
                        told.add(proc.pid)
            time.sleep(0.2)
            if time.monotonic() - shown > 2.0:        # the running units' rounds
                bar.set_postfix_str(rounds_of([u for u, _, _ in running]), refresh=True)
                shown = time.monotonic()
            for item in [r for r in running if r[1].poll() is not None]:
                shown = 0.0                            # shown again with the next units
                running.remove(item)
                unit, proc, log = item
                log.seek(0)
                tail = [line for line in log.read().splitlines() if line.strip()][-1:] or ["?"]
                log.close()
                if proc.returncode in (130, 143, -2, -15) and stop.signum is not None:
                    stopped += 1
                    continue
                if proc.returncode != 0:
                    failures.append(f"{unit.label}: {tail[0]}")
                bar.update()
    finally:
        for _, proc, _ in running:                   # a second signal: stop them now
            if proc.poll() is None:
                proc.kill()
        bar.set_postfix_str("")
    if stop.signum is not None:
        bar.close()
        print(_stop_line(todo, stopped, len(queue), stop.signum), file=sys.stderr)
        raise SystemExit(stop.exit_status)


def rounds_of(units: List[Unit]) -> str:
    """Where running units are, from their heartbeats ("FMNIST/100-0-0/idp_fedavg/seed0
    round 103/420 ~27 min left, ...": the rounds left at the mean pace of the process's
    rounds so far, evaluation and checkpoints included, or at the last round's time where
    a heartbeat has no mean; "starting" before a unit's first round, "done" once its folder
    is complete and its process has yet to end): the progress bar's
    postfix when the units run in worker processes, whose own round bars are not shown, and
    ``slurm status``'s running units."""
    where = []
    for u in units:
        partial = u.partial
        beat = read_heartbeat(partial) or {}
        done = beat.get("rounds_done")
        took = beat.get("mean_round_seconds", beat.get("round_seconds"))
        if not isinstance(done, int):       # no heartbeat yet, or none since it completed
            finished = is_complete(u.folder) and not partial.exists()    # (--force: a rerun)
            where.append(f"{u.label} {'done' if finished else 'starting'}")
            continue
        left = ""
        if isinstance(took, (int, float)) and math.isfinite(took) and took >= 0:
            left = f" ~{duration_text(max(u.cfg.rounds - done, 0) * took)} left"
        where.append(f"{u.label} round {done}/{u.cfg.rounds}{left}")
    return ", ".join(where)


def duration_text(seconds: float) -> str:
    """"40 s", "27 min" or "3.2 h"."""
    if seconds < 90:
        return f"{math.ceil(seconds)} s"
    if seconds < 2 * 3600:
        return f"{math.ceil(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def folder_state(unit: Unit) -> str:
    """'done', 'stale' (complete but made with another config), 'failed', 'running' (a
    heartbeat or a file of the partial folder within the last 10 minutes, or within three of
    its rounds when rounds are longer), 'stalled' (none for longer) or 'pending'."""
    if unit_complete(unit):
        return "done"
    if is_complete(unit.folder):
        return "stale"
    partial = unit.partial
    if not partial.exists():
        return "pending"
    if (partial / FAILED).exists():
        return "failed"
    latest = max([p.stat().st_mtime for p in partial.iterdir()] + [partial.stat().st_mtime])
    window = 600.0
    beat = read_heartbeat(partial)    # written every round (engine.checkpoint); a dict or None
    if beat is not None:
        try:
            latest = max(latest, float(beat["time"]))
            window = max(window, 3.0 * float(beat["round_seconds"]) + 60.0)
        except (ValueError, KeyError, TypeError):    # a field missing or not a number
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
