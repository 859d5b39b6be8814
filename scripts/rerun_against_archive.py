"""A table's column rerun by another computation path, set beside its archived runs: per
cell (method) the archived seeds' final accuracies and the rerun's, their means, the
archived seeds' spread, and whether the rerun's mean stays inside it; per run the seconds
it took (``seconds_wall``, a training round after the first, evaluation) and the CPU
seconds its process used (``cpu_seconds``, summed over the run's segments); the column's
totals and their ratios to the archive's. Issue 79 asks this of the low-rank path:
"every cell stays within its seed spread of the archived one" and "costs at most half the
archived runs' wall time on the same machine".

    python scripts/rerun_against_archive.py \\
        --archived runs/archive/gdpfed-fmnist-table2-same-padding/paper/FMNIST \\
        --archived runs/archive/gdpfed-fmnist-table2-seeds-3-5/paper/FMNIST \\
        --rerun results/gdpfed-fmnist-table2-same-padding/paper+fast_noise_shares_summed/FMNIST \\
        --out runs/bench/2026-12-03-fmnist-table2-column-rerun.json

The folders hold ``<method>-seed<k>/summary.json``. A cell compares the rerun's seeds with
the same seeds archived (their means, the largest difference of one seed) and with the
spread of every archived seed of the method (more archived folders: more seeds, e.g. the
same cells' seeds 3-5): "inside the spread" is the rerun's mean within the archived seeds'
[min, max]; the difference in archived standard deviations is printed beside it. The
final round's accuracy of a noised run moves by a point or two from one round to the
next, so the cells are compared again on each run's mean of its last ``--last`` (10)
evaluated rounds (metrics.csv). A rerun seed that was never archived is listed and left
out; the times compare the runs of the same seeds only.
Wall times compare only when both were measured under the same load (runs trained two at
a time beside other work take up to twice their time alone): the CPU seconds are the
measure that load changes least, and the summaries' machine records (host, CPU, boot) are
printed so that a reader can tell which machine ran what.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tff_idp.report.runs import UnreadableRun, read_run  # noqa: E402

RUN = re.compile(r"^(?P<method>.+)-seed(?P<seed>\d+)$")
LAST = 10              # evaluated rounds averaged at the end of a run (--last)
TIMES = ("seconds_wall", "seconds_per_round_after_first", "seconds_eval", "cpu_seconds")


def read_runs(folder: Path, last: int = LAST) -> dict:
    """{(method, seed): record} of the finished runs under ``folder``, each read and checked
    by the reports' :func:`tff_idp.report.runs.read_run` (a damaged file: UnreadableRun,
    one line): its final accuracy, times, machine, ``cpu_seconds`` (summed over its
    segments) and ``last_accuracy``: the mean test accuracy (%) of its last ``last``
    evaluated rounds, less noisy than the final round's alone."""
    runs = {}
    for summary in sorted(folder.glob("*/summary.json")):
        got = RUN.match(summary.parent.name)
        if not got:
            continue
        s, curve, _ = read_run(summary.parent)
        record = {t: getattr(s, t) for t in TIMES if t != "cpu_seconds"}
        missing = [t for t, v in record.items() if v is None]
        if missing:
            raise UnreadableRun(f"{summary}: no {missing[0]}")
        evaluated = [a for a in curve if not math.isnan(a)]
        runs[(got["method"], int(got["seed"]))] = {
            **record, "final_test_accuracy": s.final_test_accuracy, "machine": s.machine,
            "cpu_seconds": sum(g.get("cpu_seconds", 0.0) for g in s.segments or []),
            "last_accuracy": statistics.mean(evaluated[-last:])}
    return runs


def _std(values):
    return statistics.stdev(values) if len(values) > 1 else 0.0


def _accuracy(summary) -> float:
    return 100 * summary["final_test_accuracy"]


def compare(archived: dict, rerun: dict) -> dict:
    """The comparison of two {(method, seed): summary} sets (module docstring)."""
    both = sorted(set(archived) & set(rerun))
    cells = {}
    for method in dict.fromkeys(m for m, _ in both):
        seeds = [s for m, s in both if m == method]
        every = sorted(s for m, s in archived if m == method)
        spread = [_accuracy(archived[(method, s)]) for s in every]
        old = [_accuracy(archived[(method, s)]) for s in seeds]
        new = [_accuracy(rerun[(method, s)]) for s in seeds]
        delta = statistics.mean(new) - statistics.mean(old)
        cells[method] = {
            "seeds": seeds, "archived": old, "rerun": new,
            "archived_mean": statistics.mean(old), "rerun_mean": statistics.mean(new),
            "rerun_std": _std(new), "difference": delta,
            "largest_seed_difference": max(abs(a - b) for a, b in zip(old, new)),
            "spread_seeds": every, "spread": spread, "spread_mean": statistics.mean(spread),
            "spread_std": _std(spread),
            "difference_from_spread_mean_in_stds":
                (statistics.mean(new) - statistics.mean(spread)) / _std(spread)
                if _std(spread) else None,
            "inside_archived_range": min(spread) <= statistics.mean(new) <= max(spread),
            **_last_rounds(archived, rerun, method, seeds, every),
        }
    totals = {side: {t: sum(runs[k][t] for k in both) for t in TIMES}
              for side, runs in (("archived", archived), ("rerun", rerun))}
    return {
        "cells": cells,
        "runs": {f"{m}-seed{s}": {side: {t: runs[(m, s)][t] for t in TIMES}
                                  for side, runs in (("archived", archived), ("rerun", rerun))}
                 for m, s in both},
        "totals": totals,
        "ratios": {t: totals["rerun"][t] / totals["archived"][t] if totals["archived"][t]
                   else None for t in TIMES},
        "only_rerun": [f"{m}-seed{s}" for m, s in sorted(set(rerun) - set(archived))],
        "machines": {side: sorted({json.dumps(runs[k].get("machine", {}), sort_keys=True)
                                   for k in both})
                     for side, runs in (("archived", archived), ("rerun", rerun))},
    }


def _last_rounds(archived, rerun, method, seeds, every) -> dict:
    """The cell compared on each run's mean of its last evaluated rounds (``read_runs``)."""
    spread = [archived[(method, s)]["last_accuracy"] for s in every]
    old = statistics.mean(archived[(method, s)]["last_accuracy"] for s in seeds)
    new = statistics.mean(rerun[(method, s)]["last_accuracy"] for s in seeds)
    return {"last_archived_mean": old, "last_rerun_mean": new, "last_difference": new - old,
            "last_spread": spread,
            "last_inside_archived_range": min(spread) <= new <= max(spread)}


def table(result: dict) -> str:
    """The cells as a Markdown table."""
    lines = ["| method | seeds | archived | rerun | mean: archived -> rerun | largest seed "
             "difference | archived spread (seeds): mean +- std [min, max] | rerun's mean "
             "inside |", "|---|---|---|---|---|---|---|---|"]
    for method, c in result["cells"].items():
        lines.append(
            f"| {method} | {', '.join(map(str, c['seeds']))} | "
            f"{', '.join(f'{v:.2f}' for v in c['archived'])} | "
            f"{', '.join(f'{v:.2f}' for v in c['rerun'])} | "
            f"{c['archived_mean']:.2f} -> {c['rerun_mean']:.2f} ({c['difference']:+.2f}) | "
            f"{c['largest_seed_difference']:.2f} | ({len(c['spread'])}) "
            f"{c['spread_mean']:.2f} +- {c['spread_std']:.2f} "
            f"[{min(c['spread']):.2f}, {max(c['spread']):.2f}] | "
            f"{'yes' if c['inside_archived_range'] else 'no'} |")
    lines += ["", f"The same cells on each run's mean of its last {result['last']} evaluated "
              "rounds:", "", "| method | mean: archived -> rerun | archived spread [min, max] "
              "| rerun's mean inside |", "|---|---|---|---|"]
    for method, c in result["cells"].items():
        lines.append(
            f"| {method} | {c['last_archived_mean']:.2f} -> {c['last_rerun_mean']:.2f} "
            f"({c['last_difference']:+.2f}) | [{min(c['last_spread']):.2f}, "
            f"{max(c['last_spread']):.2f}] | "
            f"{'yes' if c['last_inside_archived_range'] else 'no'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archived", type=Path, action="append", required=True,
                        help="an archived runs' folder (repeatable: more seeds)")
    parser.add_argument("--rerun", type=Path, required=True, help="the rerun's folder")
    parser.add_argument("--last", type=int, default=LAST,
                        help=f"evaluated rounds averaged at a run's end (default {LAST})")
    parser.add_argument("--out", type=Path, help="write the comparison here (JSON)")
    args = parser.parse_args(argv)
    if args.last < 1:
        print(f"--last: {args.last} is not a number of rounds (>= 1)", file=sys.stderr)
        return 2
    read = {"--archived": {}, "--rerun": {}}
    for flag, folder in [("--archived", f) for f in args.archived] + [("--rerun", args.rerun)]:
        try:
            if not folder.is_dir():
                raise UnreadableRun(f"{folder} is not a folder")
            read[flag].update(read_runs(folder, args.last))
        except UnreadableRun as e:
            print(f"{flag}: {e}", file=sys.stderr)
            return 2
    archived, rerun = read["--archived"], read["--rerun"]
    if not set(archived) & set(rerun):
        print(f"--rerun: no finished run of {args.rerun} is archived", file=sys.stderr)
        return 2
    result = compare(archived, rerun)
    result["last"] = args.last
    result["folders"] = {"archived": [str(f) for f in args.archived], "rerun": str(args.rerun)}
    print(table(result))
    t, r = result["totals"], result["ratios"]
    print(f"\nwall time of the {len(result['runs'])} runs: archived "
          f"{t['archived']['seconds_wall']:.0f} s, rerun {t['rerun']['seconds_wall']:.0f} s "
          f"({r['seconds_wall']:.2f}x); a training round {r['seconds_per_round_after_first']:.2f}x,"
          f" evaluation {r['seconds_eval']:.2f}x; CPU seconds {t['archived']['cpu_seconds']:.0f}"
          f" -> {t['rerun']['cpu_seconds']:.0f} ({r['cpu_seconds']:.2f}x)")
    for side, machines in result["machines"].items():
        print(f"{side} machines: {'; '.join(machines)}")
    if result["only_rerun"]:
        print(f"rerun, never archived (left out): {', '.join(result['only_rerun'])}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
