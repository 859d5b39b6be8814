"""Where a bench round's CPU time goes, primitive by primitive, from oneDNN's own timings.

TensorFlow on x86 CPUs runs its convolutions, poolings, matrix products and the layout
changes between them ("reorders") as oneDNN primitives; with ``ONEDNN_VERBOSE=1`` oneDNN
prints every execution with its milliseconds. This runs ``python -m tff_idp.bench`` once per
runner (``--only`` that runner, the bench's other flags as given after ``--``) with it set,
and sums the printed times by primitive (kind, implementation, propagation) per round: the
executions of the warm-up and the timed rounds over their number. Reorders are summed by
source layout, destination layout and shape besides, since their cost is a layout's, not a
computation's. The round's time less the primitives' sum is what they do not cover
(TensorFlow's own kernels, Python, the verbose printing itself).

    taskset -c 0 python scripts/onednn_profile.py --runners fast_summed,ceiling \\
        --out runs/bench/onednn-profile.json -- --model cnn2 --chunk 120 --rounds 2

CPU only (a GPU run prints nothing of oneDNN); one lane (``--chunk 120``, not ``120x2``),
so that each runner's primitives run in its own process and nothing of another runner's
(the bench times a lane run's ceiling in a second process) is counted.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, Iterable, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def parse(lines: Iterable[str]) -> Tuple[Dict[tuple, list], Dict[tuple, list]]:
    """({(kind, implementation, propagation): [milliseconds, executions]}, {(source layout,
    destination layout, shape): [milliseconds, executions]} of the reorders) of oneDNN's
    verbose ``exec`` lines (v2 ``onednn_verbose,exec,cpu,...`` and v3
    ``onednn_verbose,[timestamp,]primitive,exec,cpu,...``); other lines are skipped."""
    by_primitive = collections.defaultdict(lambda: [0.0, 0])
    reorders = collections.defaultdict(lambda: [0.0, 0])
    for line in lines:
        if not line.startswith("onednn_verbose,"):
            continue
        parts = line.rstrip("\n").split(",")
        if "exec" not in parts:
            continue
        i = parts.index("exec")
        try:
            ms = float(parts[-1])
            kind, impl, prop, layouts = parts[i + 2], parts[i + 3], parts[i + 4], parts[i + 5]
        except (ValueError, IndexError):
            continue
        cell = by_primitive[kind, impl, prop]
        cell[0] += ms
        cell[1] += 1
        if kind == "reorder":
            src, _, dst = layouts.partition(" ")
            cell = reorders[_layout(src), _layout(dst), parts[-2]]
            cell[0] += ms
            cell[1] += 1
    return dict(by_primitive), dict(reorders)


# the operations a round's primitives are grouped into (by_operation)
OPERATIONS = ("convolution forward", "convolution backward to the input",
              "convolution backward to the filters", "matrix products", "pooling forward",
              "pooling backward", "reorders (layouts)", "other")


def by_operation(primitives) -> Dict[str, float]:
    """Milliseconds a round by operation (:data:`OPERATIONS`) of a runner's ``primitives``
    (:func:`profile_runner`'s rows): the convolutions and poolings by direction, oneDNN's
    three kinds of matrix product (``gemm_api``, ``matmul``, ``inner_product``) as one."""
    out = dict.fromkeys(OPERATIONS, 0.0)
    names = {("convolution", "forward_training"): OPERATIONS[0],
             ("convolution", "forward_inference"): OPERATIONS[0],
             ("convolution", "backward_data"): OPERATIONS[1],
             ("convolution", "backward_weights"): OPERATIONS[2],
             ("pooling", "forward_training"): OPERATIONS[4],
             ("pooling", "forward_inference"): OPERATIONS[4],
             ("pooling", "backward_data"): OPERATIONS[5]}
    for row in primitives:
        kind = row["kind"]
        name = ("matrix products" if kind in ("gemm_api", "matmul", "inner_product") else
                "reorders (layouts)" if kind == "reorder" else
                names.get((kind, row["propagation"]), "other"))
        out[name] += row["ms_per_round"]
    return out


def _layout(field: str) -> str:
    """"abcde" of oneDNN's ``src_f32::blocked:abcde::f0`` (the tag after "blocked:")."""
    after = field.split("blocked:", 1)[-1]
    return after.split(":", 1)[0]


def profile_runner(runner: str, bench_args: list) -> dict:
    """One bench process timing ``runner`` with oneDNN's verbose output: its seconds a
    round (the bench's JSON) and the primitives' milliseconds a round."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        env = dict(os.environ, ONEDNN_VERBOSE="1")
        done = subprocess.run([sys.executable, "-m", "tff_idp.bench", *bench_args, "--only",
                               runner, "--out", str(out)], env=env, cwd=ROOT,
                              capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise SystemExit(f"the bench of {runner} failed: {last}")
        bench = json.loads(out.read_text())
    executed = bench["config"]["rounds"] + bench["config"]["warmup"]
    primitives, reorders = parse(done.stdout.splitlines())
    if not primitives:
        raise SystemExit(f"the bench of {runner} printed no oneDNN primitive (not an x86 "
                         "CPU, or TF_ENABLE_ONEDNN_OPTS=0)")

    def rows(table, names):
        return sorted(({**dict(zip(names, key)), "ms_per_round": ms / executed,
                        "calls_per_round": n / executed} for key, (ms, n) in table.items()),
                      key=lambda r: -r["ms_per_round"])
    return {"seconds_per_round": bench["seconds_per_round"], "rounds_executed": executed,
            "onednn_ms_per_round": sum(ms for ms, _ in primitives.values()) / executed,
            "primitives": rows(primitives, ("kind", "implementation", "propagation")),
            "reorders": rows(reorders, ("source", "destination", "shape")),
            "machine": bench["machine"]}


def main(argv=None) -> int:
    from tff_idp.bench import RUNNERS
    argv = list(sys.argv[1:] if argv is None else argv)
    bench_args = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runners", default="fast_summed,ceiling",
                   help="comma list of the bench's runners, one process each")
    p.add_argument("--top", type=int, default=12, help="primitives printed per runner")
    p.add_argument("--out", help="a JSON file for the profile")
    args = p.parse_args(own)
    runners = [r for r in args.runners.split(",") if r]
    bad = [r for r in runners if r not in RUNNERS]
    if not runners or bad:
        p.exit(2, f"error: --runners={args.runners!r}: each must be one of "
                  f"{', '.join(RUNNERS)}\n")
    for flag in ("--only", "--out", "--peers"):
        if flag in bench_args:
            p.exit(2, f"error: {flag} after '--': this script sets the bench's {flag} itself "
                      "(--only, --out) or times no peer\n")
    got = {}
    for runner in runners:
        got[runner] = r = profile_runner(runner, bench_args)
        seconds = sum(r["seconds_per_round"].values())
        print(f"{runner}: {seconds:.3f} s a round, oneDNN primitives "
              f"{r['onednn_ms_per_round']:.0f} ms of it ({r['rounds_executed']} rounds "
              "executed, per round):")
        for name, ms in by_operation(r["primitives"]).items():
            print(f"  {ms:8.1f} ms  {name}")
        if args.top:
            print(f"  the {args.top} dearest primitives:")
        for row in r["primitives"][:args.top]:
            print(f"  {row['ms_per_round']:8.1f} ms {row['calls_per_round']:6.1f} calls  "
                  f"{row['kind']} {row['propagation']} ({row['implementation']})")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"config": {"runners": runners,
                                                         "bench_args": bench_args},
                                              "runners": got}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
