"""python -m tff_idp.slurm submit|status|collect TABLE.toml [--scale paper] [options]

``submit`` writes an sbatch array script, one array task per unit (cell x method x seed) of
the table at ``--scale``, and submits it with ``sbatch`` (``--dry-run``: only writes it).
Every task runs ``python -m tff_idp.harness.task TABLE --scale S`` as a job step (``srun``,
with the absolute interpreter and project root of the submitting machine; which unit comes
from ``$SLURM_ARRAY_TASK_ID``), skips a complete unit and resumes an interrupted one from its
checkpoint. ``--signal=TERM@GRACE`` reaches the Python task ahead of the time limit (and
Slurm sends SIGTERM on preemption): it finishes its round, checkpoints and exits 143, and the
script requeues it; after ``--max-requeues`` stops the unit fails instead. Units already
complete are left out of the array; a submit whose data are not staged is refused in one
line. ``status`` counts done / running / stalled / failed / pending units from the results
folders (running: a heartbeat written every round); ``collect`` writes the report and lists
what is missing. No Slurm is needed for ``status``, ``collect`` or ``submit --dry-run``.
"""
from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

from .config import ConfigError
from .harness.reuse import reuse_equal_runs, still_to_train
from .harness.runner import pending, rounds_of, units_by_state, write_units_list
from .harness.table import (TableSpec, check_data, check_selected, expand, load_table,
                            only_axis, only_datasets, only_methods, require_scale,
                            unit_complete, with_overrides)


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


STOPPED = 143          # a task stopped by SIGTERM after checkpointing (runtime.StopRequests)


def default_time(units, margin: float = 1.5, startup_minutes: int = 15) -> str:
    """``--time`` from the cost model (``harness.cost``): the slowest unit's estimated GPU
    time x ``margin`` + start-up, whole minutes, as Slurm's D-HH:MM:SS."""
    from .harness.cost import unit_cost
    slowest = max(unit_cost(u.cfg)["gpu_seconds"] for u in units)
    minutes = int(-(-(slowest * margin) // 60)) + startup_minutes
    days, rest = divmod(minutes, 24 * 60)
    return f"{days}-{rest // 60:02d}:{rest % 60:02d}:00"


def job_name(name: str, scale: str) -> str:
    """``#SBATCH --job-name``: the table's name and scale with every character sbatch's
    option parser or squeue's columns could split on (spaces, quotes) as ``_``."""
    return re.sub(r"[^A-Za-z0-9_.+=,@-]", "_", f"{name}-{scale}")


def sbatch_path(path: str) -> str:
    """A path in an ``#SBATCH`` line: double-quoted when it holds white space (sbatch's
    directive parser honours double quotes); a path with a double quote, a backslash or a
    control character, which no quoting keeps whole there, is refused in one line."""
    if any(c in path for c in '"\\') or any(ord(c) < 32 for c in path):
        raise ConfigError(f"log folder {path!r}: a path with a double quote, backslash or "
                          "control character cannot be written into an #SBATCH line")
    return f'"{path}"' if any(c.isspace() for c in path) else path


def sbatch_script(spec: TableSpec, scale: str, indices: List[int], args,
                  repo: Path, log_dir: Path, python: str) -> str:
    """The array script. The task runs as a job step (``srun``), so ``--signal=TERM@N``
    reaches Python itself: it finishes its round, checkpoints and exits 143; the script then
    requeues the task, which resumes from the checkpoint. The task counts its stops in its
    unit's folder and fails (FAILED.txt, exit 1, no requeue) after ``--max-requeues`` of
    them, as submitit caps timeouts."""
    array = _ranges(indices) + (f"%{args.array_parallel}" if args.array_parallel else "")
    lines = ["#!/bin/bash",
             f"#SBATCH --job-name={job_name(spec.name, scale)}",
             f"#SBATCH --array={array}",
             f"#SBATCH --time={args.time}",
             f"#SBATCH --cpus-per-task={args.cpus}",
             f"#SBATCH --mem={args.mem}",
             f"#SBATCH --output={sbatch_path(str(log_dir) + '/%A_%a.out')}",
             "#SBATCH --open-mode=append",
             "#SBATCH --requeue",
             f"#SBATCH --signal=TERM@{args.grace}"]
    for flag in ("partition", "gres", "gpus", "qos", "constraint", "account", "mail_type"):
        value = getattr(args, flag)
        if value:
            lines.append(f"#SBATCH --{flag.replace('_', '-')}={value}")
    lines += [f"#SBATCH {extra}" for extra in args.sbatch]
    gpu = bool(args.gpus) or "gpu" in (args.gres or "")
    task = " ".join(shlex.quote(t) for t in
                    [python, "-m", "tff_idp.harness.task", str(spec.path.resolve()), "--scale",
                     scale, "--max-requeues", str(args.max_requeues)] +
                    (["--require-gpu"] if gpu else []) +
                    [a for item in spec.overrides for a in ("--set", item)])
    lines += ["",
              "# one unit (cell x method x seed) per array task; a complete unit is skipped,",
              "# an interrupted one resumes from its checkpoint",
              "set -euo pipefail",
              f"cd {shlex.quote(str(repo))}"]
    for line in args.setup:      # a setup line that fails (a module the cluster lacks) says
        lines.append(f"{{ {line}\n}} || echo {shlex.quote('warning: --setup line failed: ' + line)}"
                     " >&2")                              # so, and the task goes on
    lines += [": \"${SLURM_CPUS_PER_TASK:=%d}\"" % args.cpus,
              "export SRUN_CPUS_PER_TASK=\"$SLURM_CPUS_PER_TASK\"   # Slurm 22.05-23.02: "
              "srun does not inherit --cpus-per-task"]
    if gpu:                                # a GPU=1 environment's CUDA libraries
        venv = str(Path(python).parent.parent)
        lines += [f"source scripts/gpu_env.sh {shlex.quote(venv)}"]
    lines += [f"if [ ! -x {shlex.quote(python)} ]; then",
              f"  printf 'error: interpreter %s not found on %s\\n' {shlex.quote(python)} "
              "\"$(hostname)\" >&2; exit 2",
              "fi",
              'echo "task ${SLURM_ARRAY_TASK_ID} (restart ${SLURM_RESTART_COUNT:-0}) on '
              '$(hostname)"',
              "status=0",
              f"srun --ntasks=1 --cpus-per-task=\"$SLURM_CPUS_PER_TASK\" {task} || status=$?",
              f"if [ \"$status\" -eq {STOPPED} ]; then   # SIGTERM: checkpointed; go on later",
              '  echo "stopped by SIGTERM: requeue ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"',
              '  scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"',
              "  exit 0",
              "fi",
              'exit "$status"',
              ""]
    return "\n".join(lines)


def shell_syntax_error(script: str):
    """``bash -n``'s first complaint about ``script``, or None when it parses."""
    done = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return lines[0].split(": ", 1)[-1] if lines else f"exit status {done.returncode}"


# sbatch's syntax for the fields written into #SBATCH lines (sbatch(1)); anything else,
# above all a newline, would end the directive block or inject a shell line
SBATCH_FIELDS = {
    "partition": (r"[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*", "partition names, comma-separated"),
    "qos": (r"[A-Za-z0-9_.-]+", "a QOS name"),
    "account": (r"[A-Za-z0-9_.-]+", "an account name"),
    "gres": (r"[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)*(,[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)*)*",
             "name[:type]:count, comma-separated (e.g. gpu:1 or gpu:a100:2)"),
    "gpus": (r"([A-Za-z0-9_.-]+:)?[0-9]+", "[type:]count (e.g. 1 or a100:2)"),
    "constraint": (r"[A-Za-z0-9_.,&|*()\[\]:!-]+", "features joined by & | , (no spaces)"),
    "mail_type": (r"(NONE|BEGIN|END|FAIL|REQUEUE|ALL|INVALID_DEPEND|STAGE_OUT|TIME_LIMIT"
                  r"(_[589]0)?|ARRAY_TASKS)(,(NONE|BEGIN|END|FAIL|REQUEUE|ALL|INVALID_DEPEND|"
                  r"STAGE_OUT|TIME_LIMIT(_[589]0)?|ARRAY_TASKS))*", "e.g. END,FAIL"),
    "time": (r"[0-9]+|[0-9]+:[0-9]{1,2}|[0-9]+:[0-9]{1,2}:[0-9]{1,2}|[0-9]+-[0-9]+"
             r"(:[0-9]{1,2}(:[0-9]{1,2})?)?|UNLIMITED|INFINITE",
             "minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"),
    "mem": (r"[1-9][0-9]*[KMGT]?", "a positive size, e.g. 32G or 16000M"),
}


def check_sbatch_fields(args) -> None:
    """ConfigError (one line naming the flag) for any field that sbatch's syntax refuses or
    that could end the #SBATCH block: checked before the script is written."""
    for flag, (pattern, what) in SBATCH_FIELDS.items():
        value = getattr(args, flag)
        if value == "" and flag not in ("time", "mem"):
            continue                           # an empty optional field: not written
        if value is not None and not re.fullmatch(pattern, str(value)):
            raise ConfigError(f"--{flag.replace('_', '-')}={value!r}: not sbatch syntax; "
                              f"expected {what}")
    if args.cpus is not None and not 1 <= args.cpus <= 4096:
        raise ConfigError(f"--cpus={args.cpus!r}: must be 1 to 4096")
    for flag, lines in (("--sbatch", args.sbatch), ("--setup", args.setup)):
        for line in lines:
            if not line.strip() or any(ord(c) < 32 and c != "\t" for c in line):
                raise ConfigError(f"{flag}={line!r}: one non-empty line, no control "
                                  "characters (repeat the flag for several)")
    for line in args.sbatch:
        if not line.startswith("-") or " " in line.split("=")[0]:
            raise ConfigError(f"--sbatch={line!r}: one sbatch option, e.g. --exclusive or "
                              "--nodelist=node1")
    if args.python is not None and any(ord(c) < 32 for c in args.python):
        raise ConfigError(f"--python={args.python!r}: a path on one line")


def main(argv=None) -> int:
    from .runtime import quiet_tf_logs
    quiet_tf_logs()                        # before TensorFlow is imported
    p = argparse.ArgumentParser(prog="python -m tff_idp.slurm",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=["submit", "status", "collect"],
                   help="submit the missing units, count units by state, or write the report")
    p.add_argument("table", help="a table config (TOML with a [table] section)")
    p.add_argument("--scale", default=None, help="smoke, laptop or paper (required)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="a config key for every unit, as run's --set (repeatable; results "
                   "under <scale>+<overrides> unless the keys only place the runs)")
    p.add_argument("--partition", default=None, help="#SBATCH --partition")
    p.add_argument("--gres", default="gpu:1", help="#SBATCH --gres (default gpu:1)")
    p.add_argument("--gpus", default=None, help="#SBATCH --gpus (instead of --gres)")
    p.add_argument("--qos", default=None, help="#SBATCH --qos")
    p.add_argument("--constraint", default=None, help="#SBATCH --constraint")
    p.add_argument("--mail-type", default=None, help="#SBATCH --mail-type (e.g. END,FAIL)")
    p.add_argument("--sbatch", action="append", default=[], metavar="LINE",
                   help="any other #SBATCH line, e.g. --sbatch=--exclusive (repeatable)")
    p.add_argument("--setup", action="append", default=[], metavar="LINE",
                   help="a shell line run before the task, e.g. 'module load cuda/12' "
                        "(repeatable)")
    p.add_argument("--time", default=None,
                   help="#SBATCH --time (default: the cost model's estimate of the slowest "
                        "unit x 1.5 + 15 min)")
    p.add_argument("--grace", type=int, default=300,
                   help="seconds before the time limit that SIGTERM reaches the task "
                        "(it finishes its round and checkpoints; default 300)")
    p.add_argument("--max-requeues", type=int, default=3,
                   help="stops by SIGTERM after which a unit fails instead of being requeued "
                        "(default 3)")
    p.add_argument("--python", default=None,
                   help="the interpreter on the compute nodes (default: the one running "
                        "this command, absolute)")
    p.add_argument("--cpus", type=int, default=4, help="#SBATCH --cpus-per-task (default 4)")
    p.add_argument("--mem", default="32G", help="#SBATCH --mem (default 32G)")
    p.add_argument("--only", default=None, metavar="LABELS",
                   help="only these data-set labels, as run's --only (comma-separated)")
    p.add_argument("--axis", default=None, metavar="LABELS",
                   help="only these labels of the table's [axis], as run's --axis")
    p.add_argument("--methods", default=None, metavar="NAMES",
                   help="only these of the table's methods, as run's --methods")
    p.add_argument("--account", default=None, help="#SBATCH --account")
    p.add_argument("--array-parallel", type=int, default=None,
                   help="at most N array tasks at once (--array=...%%N)")
    p.add_argument("--dry-run", action="store_true", help="write the script, do not submit")
    args = p.parse_args(argv)
    try:
        check_sbatch_fields(args)
        args.scale = require_scale(args.scale)
        whole = with_overrides(load_table(args.table), args.overrides)
        spec = only_axis(only_methods(only_datasets(whole, args.only), args.methods),
                         args.axis)
        if spec.kind != "train":
            raise ConfigError(f"table.kind={spec.kind!r}: nothing to train; run "
                              f"python -m tff_idp.report {args.table}")
        units = expand(spec, args.scale)
        check_selected(spec, units, {"--only": args.only, "--axis": args.axis,
                                     "--methods": args.methods})
        # array task i runs unit i of the whole table (harness.task expands it all)
        all_units = units if spec is whole else expand(whole, args.scale)
        if args.array_parallel is not None and args.array_parallel < 1:
            raise ConfigError(f"--array-parallel={args.array_parallel}: must be >= 1")
        if args.grace < 30:
            raise ConfigError(f"--grace={args.grace}: must be >= 30 seconds")
        if args.max_requeues < 0:
            raise ConfigError(f"--max-requeues={args.max_requeues}: must be >= 0")
        if args.command == "submit":        # the data the missing units need is staged
            try:
                check_data(still_to_train(spec, args.scale, pending(units)))
            except ConfigError as e:
                why = (f"{str(e).split('; ')[0]}; stage it with python -m tff_idp.data "
                       f"fetch {args.table}")
                if not args.dry_run:
                    raise ConfigError(why) from e
                print(f"warning: {why} (a real submit refuses until then)", file=sys.stderr)
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
        for u in states.get("running", []):          # its round, from its heartbeat
            print(f"  running: {rounds_of([u])}")
        return 0
    if args.command == "collect":
        from .report import write_report
        path = write_report(whole, args.scale)      # the table's report, every cell
        missing = pending(units)
        print(f"report: {path}; {len(units) - len(missing)} of {len(units)} units complete")
        return 0
    reuse_equal_runs(spec, args.scale, pending(units))   # runs other tables already made
    chosen = {u.label for u in units}
    todo = [i for i, u in enumerate(all_units) if u.label in chosen and not unit_complete(u)]
    slurm_dir = root / "slurm"
    log_dir = slurm_dir / "logs"
    if not todo:
        print(f"{spec.name} at scale {args.scale}: every unit is complete; nothing to submit")
        return 0
    repo = Path(__file__).resolve().parents[1]
    python = str(Path(args.python or sys.executable).absolute())
    time_note = ""
    if args.time is None:
        from .harness.cost import GPU_NAME
        args.time = default_time([all_units[i] for i in todo])
        time_note = (f"; --time {args.time}: the cost model's slowest unit on one {GPU_NAME} "
                     "x 1.5 + 15 min (give --time for another device)")
    try:
        text = sbatch_script(spec, args.scale, todo, args, repo, log_dir.resolve(), python)
    except ConfigError as e:               # a path no #SBATCH line can hold whole
        print(f"error: {e}", file=sys.stderr)
        return 2
    why = shell_syntax_error(text)
    if why:                                # e.g. an unbalanced quote in a --setup line
        print(f"error: --setup={args.setup!r}: the batch script would not parse (bash -n: "
              f"{why}); nothing written", file=sys.stderr)
        return 2
    log_dir.mkdir(parents=True, exist_ok=True)
    write_units_list(all_units, slurm_dir / "units.tsv")
    script = slurm_dir / "array.sbatch"
    script.write_text(text)
    print(f"wrote {script} ({len(todo)} of {len(units)} units; index -> unit in "
          f"{slurm_dir / 'units.tsv'}){time_note}")
    if args.dry_run:                       # shown, for a look before a real submit
        print("\n" + text)
        return 0
    if shutil.which("sbatch") is None:
        print("error: sbatch: not found on this machine; use --dry-run to only write the "
              "script", file=sys.stderr)
        return 2
    proc = subprocess.run(["sbatch", str(script)], capture_output=True, text=True)
    print(proc.stdout.strip() or proc.stderr.strip())
    return proc.returncode


if __name__ == "__main__":
    from .runtime import exit_quietly, run_stoppable
    from . import EARLY_STOPS          # a stop during the imports (tff_idp/__init__.py)
    exit_quietly(run_stoppable(main, early=EARLY_STOPS))
