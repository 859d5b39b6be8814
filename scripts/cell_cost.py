"""What a placement or a setting costs on one cell of a table: the cell's run, a few rounds,
under named variants of ``--set``, each in a fresh ``python -m tff_idp.run`` process, the
variants alternated ``--repeats`` times (so that a machine's drift falls on all of them).
Each run's own timings are read from its summary.json: seconds a training round after the
first (``seconds_per_round_after_first``), seconds of evaluation, of the whole run
(``seconds_wall``), and its final accuracy; the medians over the repeats, and each variant's
ratios to the first variant's, are the result. Nothing is written under results/: the runs
go to a temporary folder.

    python scripts/cell_cost.py runs/gdpfed/ablations/fmnist-table2-same-padding.toml \\
        --method gdpfed --rounds 6 --repeats 2 \\
        --variant 'archived path: fast_dense_updates="per_client"' \\
        --variant 'low-rank, summed shares: fast_noise_shares="summed"' \\
        --out runs/bench/cell-cost.json

A variant is ``NAME: KEY=VALUE; KEY=VALUE`` (the values as ``--set`` takes them); ``NAME:``
alone runs the cell as configured.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MEASURES = ("seconds_per_round_after_first", "seconds_eval", "seconds_wall")


def parse_variant(text: str):
    """``NAME: KEY=VALUE; ...`` -> (name, ["KEY=VALUE", ...])."""
    name, sep, sets = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"--variant {text!r}: expected 'NAME: KEY=VALUE; ...'")
    pairs = [s.strip() for s in sets.split(";") if s.strip()]
    for pair in pairs:
        if "=" not in pair:
            raise argparse.ArgumentTypeError(f"--variant {text!r}: {pair!r} is not KEY=VALUE")
    return name.strip(), pairs


def run_once(args, sets, folder: Path) -> dict:
    """One run of the cell with ``sets`` into ``folder``: its summary's timings."""
    cmd = [sys.executable, "-m", "tff_idp.run", str(args.config), "--set",
           f"rounds={args.rounds}", "--output-dir", str(folder), "--quiet"]
    if args.scale:                          # a table: its cell by flags
        cmd += ["--scale", args.scale, "--methods", args.method, "--seeds", str(args.seed),
                "--no-report"] + (["--only", args.only] if args.only else [])
    else:                                   # an experiment config: by its keys
        cmd += ["--set", f'methods=["{args.method}"]', "--set", f"seed={args.seed}"]
    for pair in sets:
        cmd += ["--set", pair]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise SystemExit(f"cell_cost: {' '.join(cmd)} failed ({done.returncode}): {tail[0]}")
    summaries = sorted(folder.rglob("summary.json"))
    if len(summaries) != 1:
        raise SystemExit(f"cell_cost: expected one run in {folder}, found {len(summaries)}")
    s = json.loads(summaries[0].read_text())
    return {**{k: float(s[k]) for k in MEASURES},
            "final_test_accuracy": float(s["final_test_accuracy"]),
            "backend_mode": s.get("backend_mode")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("config", type=Path, help="a table or experiment config (TOML)")
    p.add_argument("--method", required=True, help="the cell's method")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scale", default="paper", help="a table's scale (default paper; '' for "
                   "an experiment config)")
    p.add_argument("--only", help="a table's data-set label, where it has several")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--variant", type=parse_variant, action="append", required=True,
                   help="NAME: KEY=VALUE; KEY=VALUE (repeatable; the first is the base)")
    p.add_argument("--out", help="a JSON file for the runs, medians, ratios and the machine")
    args = p.parse_args(argv)
    if args.rounds < 2 or args.repeats < 1:
        p.error(f"--rounds {args.rounds} / --repeats {args.repeats}: at least 2 rounds "
                "(the first is not timed) and 1 repeat")
    names = [n for n, _ in args.variant]
    if len(set(names)) != len(names):
        p.error(f"--variant: the names repeat: {names}")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from tff_idp.engine.segments import describe, machine
    runs = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="cell-cost-") as tmp:
        for rep in range(args.repeats):
            for i, (name, sets) in enumerate(args.variant):
                got = run_once(args, sets, Path(tmp) / f"{i}-{rep}")
                runs[name].append(got)
                print(f"  {name} (repeat {rep + 1}): "
                      f"{got['seconds_per_round_after_first']:.3f} s a round, "
                      f"evaluation {got['seconds_eval']:.2f} s, run {got['seconds_wall']:.2f} s, "
                      f"accuracy {100 * got['final_test_accuracy']:.2f}%", flush=True)
    medians = {name: {k: statistics.median(r[k] for r in rs) for k in MEASURES}
               for name, rs in runs.items()}
    base = medians[names[0]]
    ratios = {name: {k: m[k] / base[k] for k in MEASURES} for name, m in medians.items()}
    where = machine("auto")
    print(f"{args.config} / {args.method} seed {args.seed}, {args.rounds} rounds, medians of "
          f"{args.repeats}, x {names[0]!r}:")
    for name in names:
        m, r = medians[name], ratios[name]
        print(f"  {name:<40} {m['seconds_per_round_after_first']:7.3f} s a round "
              f"({r['seconds_per_round_after_first']:.2f}x), run {m['seconds_wall']:7.2f} s "
              f"({r['seconds_wall']:.2f}x)")
    print("  " + describe(where))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(
            {"config": {**vars(args), "config": str(args.config),
                        "variant": [{"name": n, "set": s} for n, s in args.variant]},
             "runs": runs, "medians": medians, "ratios": ratios, "machine": where},
            indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
