"""python -m tff_idp.slurm submit|status|collect TABLE.toml [--scale paper] [options]

``submit`` writes an sbatch array script, one array task per unit (cell x method x seed) of
the table at ``--scale``, and submits it with ``sbatch`` (``--dry-run``: only writes it).
Every task runs ``python -m tff_idp.harness.task TABLE --scale S`` (which picks its unit from
``$SLURM_ARRAY_TASK_ID``), skips a complete unit, resumes an interrupted one from its
checkpoint, and is requeued when preempted (``--requeue``; SIGTERM ahead of the kill is
caught by Slurm's requeue and the task restarts from the last checkpoint). Units already
complete are left out of the array (``--array`` lists only the missing indices).
``status`` counts done / running / stalled / failed / pending units from the results
folders; ``collect`` writes the report (``python -m tff_idp.report``) and lists what is
missing. No Slurm is needed for ``status``, ``collect`` or ``submit --dry-run``.
"""
from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

from .config import ConfigError
from .harness.runner import pending, unit_complete, units_by_state, write_units_list
from .harness.table import TableSpec, expand, load_table


def _ranges(indices: List[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8' (Slurm's --array syntax)."""
    out, start, prev = [], None, None
    for i in indices:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}-{prev}" if prev > start else f"{start}")
            start = prev = i
    if start is not None:
        out.append(f"{start}-{prev}" if prev > start else f"{start}")
    return ",".join(out)


def sbatch_script(spec: TableSpec, scale: str, indices: List[int], args,
                  repo: Path, log_dir: Path) -> str:
    array = _ranges(indices) + (f"%{args.array_parallel}" if args.array_parallel else "")
    lines = ["#!/bin/bash",
             f"#SBATCH --job-name={spec.name}-{scale}",
             f"#SBATCH --array={array}",
             f"#SBATCH --time={args.time}",
             f"#SBATCH --cpus-per-task={args.cpus}",
             f"#SBATCH --mem={args.mem}",
             f"#SBATCH --output={log_dir}/%A_%a.out",
             "#SBATCH --open-mode=append",
             "#SBATCH --requeue",
             "#SBATCH --signal=B:TERM@120"]
    if args.partition:
        lines.append(f"#SBATCH --partition={args.partition}")
    if args.gres:
        lines.append(f"#SBATCH --gres={args.gres}")
    if args.account:
        lines.append(f"#SBATCH --account={args.account}")
    task = " ".join(shlex.quote(t) for t in
                    ["python", "-m", "tff_idp.harness.task", str(spec.path), "--scale", scale])
    lines += ["",
              "# one unit (cell x method x seed) per array task; a complete unit is skipped,",
              "# an interrupted one resumes from its checkpoint (after a preemption requeue or",
              "# the requeue below, sent when the time limit is 120 s away)",
              "set -uo pipefail",
              f"cd {shlex.quote(str(repo))}",
              "source .venv/bin/activate",
              'echo "task ${SLURM_ARRAY_TASK_ID} (restart ${SLURM_RESTART_COUNT:-0}) on '
              '$(hostname)"',
              "requeue() {",
              '  echo "time limit near: requeue ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"',
              '  scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"',
              "}",
              "trap requeue TERM",
              f"{task} &",
              "wait $!",
              ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    from .runtime import quiet_tf_logs
    quiet_tf_logs()                        # before TensorFlow is imported
    p = argparse.ArgumentParser(prog="python -m tff_idp.slurm",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=["submit", "status", "collect"])
    p.add_argument("table")
    p.add_argument("--scale", default="paper")
    p.add_argument("--partition", default=None)
    p.add_argument("--gres", default="gpu:1")
    p.add_argument("--time", default="04:00:00")
    p.add_argument("--cpus", type=int, default=4)
    p.add_argument("--mem", default="32G")
    p.add_argument("--account", default=None)
    p.add_argument("--array-parallel", type=int, default=None,
                   help="at most N array tasks at once (--array=...%%N)")
    p.add_argument("--dry-run", action="store_true", help="write the script, do not submit")
    args = p.parse_args(argv)
    try:
        spec = load_table(args.table)
        if spec.kind != "train":
            raise ConfigError(f"table.kind={spec.kind!r}: nothing to train; run "
                              f"python -m tff_idp.report {args.table}")
        units = expand(spec, args.scale)
        if args.array_parallel is not None and args.array_parallel < 1:
            raise ConfigError(f"--array-parallel={args.array_parallel}: must be >= 1")
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    root = spec.out_root(args.scale)
    if args.command == "status":
        states = units_by_state(units)
        order = ("done", "running", "stalled", "failed", "stale", "pending")
        print(f"{spec.name} at scale {args.scale}: {len(units)} units; " +
              ", ".join(f"{k} {len(states.get(k, []))}" for k in order))
        for k in ("failed", "stalled"):
            for u in states.get(k, []):
                print(f"  {k}: {u.label} ({u.folder}.partial)")
        return 0
    if args.command == "collect":
        from .report import write_report
        path = write_report(spec, args.scale)
        missing = pending(units)
        print(f"report: {path}; {len(units) - len(missing)} of {len(units)} units complete")
        return 0
    todo = [i for i, u in enumerate(units) if not unit_complete(u)]
    slurm_dir = root / "slurm"
    log_dir = slurm_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    write_units_list(units, slurm_dir / "units.tsv")
    if not todo:
        print(f"{spec.name} at scale {args.scale}: every unit is complete; nothing to submit")
        return 0
    repo = Path.cwd().resolve()
    script = slurm_dir / "array.sbatch"
    script.write_text(sbatch_script(spec, args.scale, todo, args, repo, log_dir.resolve()))
    print(f"wrote {script} ({len(todo)} of {len(units)} units; index -> unit in "
          f"{slurm_dir / 'units.tsv'})")
    if args.dry_run:
        return 0
    if shutil.which("sbatch") is None:
        print("error: sbatch: not found on this machine; use --dry-run to only write the "
              "script", file=sys.stderr)
        return 2
    proc = subprocess.run(["sbatch", str(script)], capture_output=True, text=True)
    print(proc.stdout.strip() or proc.stderr.strip())
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
