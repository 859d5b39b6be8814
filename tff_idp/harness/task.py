"""python -m tff_idp.harness.task TABLE --scale S [--index I] [--output-dir D] [--force]

Runs one unit of a table: the one at ``--index`` or, without it, at ``$SLURM_ARRAY_TASK_ID``
(what a Slurm array task runs). A complete unit is skipped (unless ``--force``); an
interrupted one resumes from its checkpoint (a requeued, preempted task picks up where it
stopped), and a retry clears the unit's old ``FAILED.txt``. SIGTERM (Slurm's time-limit
signal or a preemption) finishes the round, checkpoints and exits 143, for the batch script
to requeue the task; in a Slurm job, a stop near the job's end time (``$SLURM_JOB_END_TIME``,
or any stop when Slurm does not say) is counted in the unit's folder, and after
``--max-requeues`` of them the unit fails instead (a time limit too short for one unit would
requeue it forever). With ``--require-gpu`` (the batch script passes it when the job asks
for a GPU) a node where TensorFlow sees none fails at once.
Exit status: 0 done, 1 the run failed (``FAILED.txt`` in its ``.partial`` folder), 2 bad
input or no GPU, 143 stopped to be requeued.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from ..config import ConfigError


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tff_idp.harness.task")
    p.add_argument("table")
    p.add_argument("--scale", default="paper")
    p.add_argument("--index", type=int, default=None)
    p.add_argument("--output-dir", default=None)
    p.add_argument("--set", dest="overrides", action="append", default=[],
                   help="the table run's --set items (every unit)")
    p.add_argument("--force", action="store_true",
                   help="train the unit again even when it is complete (a table run's --force)")
    p.add_argument("--max-requeues", type=int, default=3)
    p.add_argument("--require-gpu", action="store_true",
                   help="fail at once (exit 2, one line, not requeued) when TensorFlow sees "
                        "no GPU: a GPU job on a node without one must not train on its CPU")
    args = p.parse_args(argv)
    from ..runtime import exit_cleanly_on_sigterm, quiet_tf_logs
    quiet_tf_logs()
    exit_cleanly_on_sigterm()        # a SIGTERM during start-up: exit 143 too, to be requeued
    from .runner import run_unit_recording_failure
    from .table import unit_complete
    from .table import expand, load_table, with_overrides
    try:
        if args.require_gpu:
            from ..runtime import select_device
            try:
                select_device("gpu")
            except ConfigError as e:
                host = os.uname().nodename
                raise ConfigError(f"{e} ({host}); a GPU job must not train on the CPU; "
                                  "not requeued") from e
        index = args.index
        if index is None:
            raw = os.environ.get("SLURM_ARRAY_TASK_ID")
            if raw is None or not raw.isdigit():
                raise ConfigError(f"SLURM_ARRAY_TASK_ID={raw!r}: give --index or run as an "
                                  "array task")
            index = int(raw)
        units = expand(with_overrides(load_table(args.table), args.overrides), args.scale,
                       args.output_dir)
        if not 0 <= index < len(units):
            raise ConfigError(f"--index={index}: the table has units 0..{len(units) - 1}")
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except SystemExit as e:          # SIGTERM while reading the table: nothing to count
        if e.code == STOPPED:
            return STOPPED
        raise
    unit = units[index]
    from ..runtime import one_thread_per_op_for_lanes
    one_thread_per_op_for_lanes([unit.cfg])     # before TensorFlow's runtime starts
    if unit_complete(unit) and not args.force:
        print(f"{unit.label}: already complete", file=sys.stderr)
        return 0
    from ..runtime import close_tff
    from .runner import FAILED
    partial = unit.partial
    (partial / FAILED).unlink(missing_ok=True)          # a retry starts afresh
    try:
        err = run_unit_recording_failure(unit)
    except SystemExit as e:
        if e.code != STOPPED:
            raise
        return _stopped(unit, partial, args.max_requeues)
    finally:
        close_tff()
    if err:
        print(f"failed: {err}", file=sys.stderr)
        return 1
    print(f"{unit.label}: done -> {unit.folder}", file=sys.stderr)
    return 0


STOPPED = 143
STOPS = "stops.txt"


def _stopped(unit, partial, max_requeues: int) -> int:
    """After a stop by SIGTERM: 143 (requeue me), or 1 with FAILED.txt once the unit has
    been stopped near its job's end more than ``max_requeues`` times."""
    end = os.environ.get("SLURM_JOB_END_TIME", "")
    timeout = "SLURM_JOB_ID" in os.environ and (               # a user's stop is no timeout
        not end.isdigit() or time.time() >= int(end) - 900)
    partial.mkdir(parents=True, exist_ok=True)
    count = 0
    if (partial / STOPS).exists():
        count = int((partial / STOPS).read_text().strip() or 0)
    if timeout:
        count += 1
        (partial / STOPS).write_text(f"{count}\n")
    if count > max_requeues:
        from .runner import FAILED
        (partial / FAILED).write_text(
            f"stopped by SIGTERM near the time limit {count} times without finishing "
            f"(--max-requeues {max_requeues}); submit with a longer --time\n")
        print(f"failed: {unit.label}: stopped {count} times near the time limit",
              file=sys.stderr)
        return 1
    print(f"{unit.label}: stopped by SIGTERM after a checkpoint ({count} of "
          f"{max_requeues} time-limit stops); requeue to resume", file=sys.stderr)
    return STOPPED


if __name__ == "__main__":
    sys.exit(main())
