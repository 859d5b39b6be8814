"""python -m tff_idp.report TABLE.toml --scale smoke|laptop|paper [--report-dir DIR]
python -m tff_idp.report --status [--write]

Aggregates a table's results over seeds (mean and sample std), renders the table in the
paper's shape with our number, the paper's number and the difference in each cell, as
Markdown (``report.md``) and CSV (``report.csv``, one row per cell x method; ``curves.csv``,
each run's accuracy per round, from which ``--replot`` redraws the figure), and draws the
table's figures as PNG: convergence curves (mean test accuracy per round, one line per
method, one panel per data set) and Problem-1 rates against epsilon_1. ``noise`` and
``rates`` tables are computed (no training) at the paper's settings. Only complete results
folders are read (a missing one is first copied from an equal run elsewhere under the
results root or in the repository's ``runs/archive/``: ``harness.reuse``); missing units are
listed, never filled in. ``--archive`` copies the complete runs into ``runs/archive/``
(``harness.archive``). Default output folder: ``<output_dir>/<table>/<scale>/report/``.
The report's first table (our numbers beside the paper's) is printed, its path said on
standard error, as ``run`` does at the end of a table.
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from ..atomic import check_writable_dir
from ..config import ConfigError
from ..harness.table import (expand, load_table, only_axis, only_datasets, only_methods,
                             require_scale, unit_complete, with_overrides)
from .document import main_table, report_dir, write_report
from .figures import plot_convergence
from .runs import CURVES, cells_from_curves

REPOSITORY = Path(__file__).resolve().parents[2]     # its README, runs/ and committed reports


def main(argv=None) -> int:
    from ..runtime import quiet_tf_logs
    quiet_tf_logs()                        # before TensorFlow is imported
    p = argparse.ArgumentParser(prog="python -m tff_idp.report",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("table", nargs="?", help="a table config (TOML with a [table] section)")
    p.add_argument("--scale", default=None,
                   help="smoke, laptop or paper: whose results to report (required for a "
                   "table of trained runs, as for run; computed tables: paper)")
    p.add_argument("--report-dir", "--out", dest="out", default=None, metavar="DIR",
                   help="folder of the report (default <results>/<table>/<scale>/report; "
                   "the same flag as run's)")
    p.add_argument("--output-dir", default=None,
                   help="where the runs' results are (default the table's output_dir)")
    p.add_argument("--only", default=None, metavar="LABELS",
                   help="only these data-set labels (comma-separated, e.g. FMNIST)")
    p.add_argument("--axis", default=None, metavar="LABELS",
                   help="only these labels of the table's [axis] (comma-separated, e.g. 0.5x)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="the runs made with run's --set (repeatable; --backend and --device "
                   "are given as --set backend=... here)")
    p.add_argument("--methods", default=None, metavar="NAMES",
                   help="only these of the table's methods (comma-separated registry keys)")
    p.add_argument("--archive", action="store_true",
                   help="also copy the complete runs into the repository's runs/archive/ "
                   "(harness.archive), to commit: a fresh clone then regenerates this report "
                   "and resumes the table from them")
    p.add_argument("--replot", action="store_true",
                   help="only redraw convergence.png in the report's folder (the default "
                   "one or --report-dir) from its curves.csv; the runs' results are not read")
    p.add_argument("--status", action="store_true",
                   help="print the README's 'What is reproduced' table computed from "
                   "runs/status.toml and the archived runs and committed reports (no table "
                   "config; report.status)")
    p.add_argument("--write", action="store_true",
                   help="with --status: put the table into README.md between its markers, and the "
                   "list of committed reports and their archived runs into "
                   "runs/archive/README.md (report.evidence)")
    args = p.parse_args(argv)
    if args.status or args.write:
        return _status(args)
    if args.table is None:
        print("error: table: a table config is needed (or --status)", file=sys.stderr)
        return 2
    from ..runtime import StopRequests, StoppedInStartUp
    with StopRequests() as stop:
        try:
            with stop.immediately():      # a report has nothing to checkpoint: stop at once
                return _report(args)
        except StoppedInStartUp:
            print(f"stopped ({'Ctrl-C' if stop.signum == signal.SIGINT else 'SIGTERM'}); the "
                  "report was not written", file=sys.stderr)
            return stop.exit_status


def _status(args) -> int:
    """``--status``: the README's status table, printed (or written into README.md)."""
    from .status import status_markdown, write_into
    root = REPOSITORY
    if not args.status:
        print("error: --write: only with --status", file=sys.stderr)
        return 2
    if args.table is not None:
        print(f"error: table={args.table!r}: --status reads runs/status.toml, not a table "
              "config", file=sys.stderr)
        return 2
    try:
        block = status_markdown(root)
        if args.write:
            changed = write_into(root / "README.md", block)
            print(f"README.md: status table {'rewritten' if changed else 'unchanged'}",
                  file=sys.stderr)
            from . import evidence
            listing = root / "runs" / "archive" / "README.md"
            changed = write_into(listing, evidence.evidence_markdown(root), evidence.BEGIN,
                                 evidence.END)
            print(f"{listing.relative_to(root)}: committed reports and their archived runs "
                  f"{'rewritten' if changed else 'unchanged'}", file=sys.stderr)
            return 0
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(block)
    return 0


def _committed(args, spec) -> str:
    """Where the committed reports of this config at this scale are whose runs are not all
    archived (runs/archive/README.md says which), or "": a report redrawn from its archived
    runs holds no run that is missing here. None with ``--set``: the committed reports are
    made without it (their report.md names no override), so not from the runs asked for."""
    from .evidence import committed_for
    if args.overrides:
        return ""
    reports = [r for r in committed_for(REPOSITORY, spec.path, args.scale, spec.datasets)
               if not r.redrawn]
    return ", ".join(f"{r.folder}/report.md" for r in reports)


def _run_command(args) -> str:
    """The ``run`` command that trains the runs this report asks for (its --only, --axis,
    --methods and --set included)."""
    import shlex
    words = ["python", "-m", "tff_idp.run", args.table, "--scale", args.scale]
    for flag, value in (("--only", args.only), ("--axis", args.axis),
                        ("--methods", args.methods)):
        if value:
            words += [flag, value]
    for item in args.overrides:
        words += ["--set", item]
    return shlex.join(words)


def _report(args) -> int:
    """``main`` after its arguments: validate, collect, write (and archive)."""
    try:
        spec = only_methods(only_datasets(load_table(args.table), args.only), args.methods)
        spec = with_overrides(only_axis(spec, args.axis), args.overrides)
        if args.scale is None and spec.kind != "train":    # computed: no scale of runs
            args.scale = "paper"
        args.scale = require_scale(args.scale)
        units = expand(spec, args.scale, args.output_dir)
        if args.archive:
            from ..harness.archive import archive_root
            if archive_root(spec) is None:
                raise ConfigError(f"--archive: {args.table} is not under a folder named runs/ "
                                  "(the archive is runs/archive/)")
        if args.out:                        # a file or a dangling link there: one line
            check_writable_dir("--report-dir", args.out)
        if args.replot and "convergence" not in spec.figures:
            raise ConfigError(f"--replot: {args.table} draws no convergence figure (its "
                              f"[table] figures = {spec.figures})")
        if args.replot:
            out = report_dir(spec, args.scale, args.output_dir, args.out or None)
            cells = cells_from_curves(out / CURVES, spec)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.replot:
        path = plot_convergence(spec, cells, out / "convergence.png", args.scale)
        if path is None:
            print(f"error: {out / CURVES} has no curve of {spec.name}", file=sys.stderr)
            return 1
        print(path)
        return 0
    if spec.kind == "train":                # archived runs stand in for missing folders
        from ..harness.reuse import reuse_equal_runs
        from ..harness.runner import pending
        reuse_equal_runs(spec, args.scale, pending(units), args.output_dir)
    if spec.kind == "train" and not any(unit_complete(u) for u in units):
        print(f"error: no run of {spec.name} at scale {args.scale} is complete under "
              f"{spec.out_root(args.scale, args.output_dir)}; nothing to report (train them: "
              f"{_run_command(args)})"
              + (f"; the committed report made from runs not archived: {committed}"
                 if (committed := _committed(args, spec)) else ""), file=sys.stderr)
        return 1
    path = write_report(spec, args.scale, Path(args.out) if args.out else None,
                        args.output_dir)
    print(main_table(path.read_text()))
    print(f"report: {path}", file=sys.stderr)
    from ..harness.archive import failed_runs
    incomplete = [u for u in units if not unit_complete(u)]
    missing = len(incomplete) - len(failed_runs(spec, args.scale, incomplete, args.output_dir))
    if missing and (committed := _committed(args, spec)):
        print(f"note: {missing} of {len(units)} runs are neither here nor archived "
              f"(runs/archive/README.md); the committed report made from them: {committed}; "
              f"to make them here: {_run_command(args)}",
              file=sys.stderr)
    if args.archive:
        from ..harness.archive import archive_root, archive_runs
        from ..harness.failures import SUFFIX
        written = archive_runs(spec, args.scale, units, args.output_dir)
        records = sum(p.name.endswith(SUFFIX) for p in written)
        print(f"archived {len(written) - records} run(s)" +
              (f" and {records} failure record(s)" if records else "") +
              f" in {archive_root(spec) / spec.name}", file=sys.stderr)
    return 0
