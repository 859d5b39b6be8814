"""python -m tff_idp.harness.task TABLE --scale S [--index I] [--output-dir D]

Runs one unit of a table: the one at ``--index`` or, without it, at ``$SLURM_ARRAY_TASK_ID``
(what a Slurm array task runs). A complete unit is skipped; an interrupted one resumes from
its checkpoint (a requeued, preempted task picks up where it stopped). Exit status: 0 done,
1 the run failed (``FAILED.txt`` in its ``.partial`` folder), 2 bad input.
"""
from __future__ import annotations

import argparse
import os
import sys

from ..config import ConfigError


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tff_idp.harness.task")
    p.add_argument("table")
    p.add_argument("--scale", default="paper")
    p.add_argument("--index", type=int, default=None)
    p.add_argument("--output-dir", default=None)
    args = p.parse_args(argv)
    from .runner import run_unit_recording_failure, unit_complete
    from .table import expand, load_table
    try:
        index = args.index
        if index is None:
            raw = os.environ.get("SLURM_ARRAY_TASK_ID")
            if raw is None or not raw.isdigit():
                raise ConfigError(f"SLURM_ARRAY_TASK_ID={raw!r}: give --index or run as an "
                                  "array task")
            index = int(raw)
        units = expand(load_table(args.table), args.scale, args.output_dir)
        if not 0 <= index < len(units):
            raise ConfigError(f"--index={index}: the table has units 0..{len(units) - 1}")
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    unit = units[index]
    if unit_complete(unit):
        print(f"{unit.label}: already complete", file=sys.stderr)
        return 0
    from ..runtime import close_tff
    try:
        err = run_unit_recording_failure(unit)
    finally:
        close_tff()
    if err:
        print(f"failed: {err}", file=sys.stderr)
        return 1
    print(f"{unit.label}: done -> {unit.folder}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
