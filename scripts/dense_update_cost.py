"""What the low-rank Dense updates save in the fast backend's client training (issue 79).

Times one chunk's local training (``--clients`` clients x ``--steps`` steps x batch
``--batch``, plain SGD, GDPFed's FMNIST setting) of a CNN on synthetic 28x28x1 inputs in
three forms, all in one process: every kernel a matrix per client
(``ClientTrainer.train_cohort``, the fast backend before issue 79), the first Dense kernel
in the low-rank form (``engine.low_rank.train_factored``), and the same with its clipped
group sums formed from the factors (what the backend does after training). Medians of
``--repeats`` calls after one warm-up; the ratios are the result. The rest of a chunk's
training is the convolutions (scripts/grouped_conv_cost.py).

    python scripts/dense_update_cost.py --model cnn2_same --out runs/bench/dense-update-cost.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _median_seconds(fn, args, repeats: int) -> float:
    fn(*args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn(*args)
        [np.asarray(t) for t in __import__("tensorflow").nest.flatten(out)]
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="cnn2_same", choices=("cnn2", "cnn2_same"))
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=None, help="where the JSON goes (default: none)")
    args = p.parse_args(argv)
    for key in ("clients", "steps", "batch", "repeats"):
        if getattr(args, key) < 1:
            print(f"error: --{key}={getattr(args, key)}: must be at least 1", file=sys.stderr)
            return 2
    import tensorflow as tf
    from tff_idp import models
    from tff_idp.algorithms.client_work import ALL, ClientProgram, ClientTrainer
    from tff_idp.algorithms.round_parts import Phase, client_output, server_update
    from tff_idp.engine import low_rank
    from tff_idp.engine.cohort_model import CohortModel
    from tff_idp.engine.segments import describe, machine
    from tff_idp.models.split import split_model

    model = models.build(args.model, input_shape=(28, 28, 1), num_classes=10)
    cohort = CohortModel(model)
    k, steps, b = args.clients, args.steps, args.batch
    rng = np.random.default_rng(0)
    xs = tf.constant(rng.random((k, steps, b, 28, 28, 1)), tf.float32)
    ys = tf.constant(rng.integers(0, 10, (k, steps, b)))
    weights = [tf.constant(w) for w in model.get_weights()]
    trainer = ClientTrainer("sgd", 0.0)
    program = ClientProgram([Phase("all", steps, None)], split_model(model, "none"),
                            client_output, server_update)
    kernels = [cohort.dense_kernels()[0][1]]
    groups = tf.one_hot(np.arange(k) % 3, 3)
    lr = tf.constant(0.1)

    def factored(x, y):
        return low_rank.train_factored(trainer, cohort, program, weights, kernels, (x, y, None),
                                       lr, ALL)

    forms = {
        "per_client": tf.function(lambda x, y: trainer.train_cohort(cohort, weights, x, y, lr)),
        "low_rank": tf.function(factored),
        "low_rank_and_group_sums": tf.function(
            lambda x, y: [f.group_sums(groups, tf.ones([k])) for f in factored(x, y)[1]]),
    }
    seconds = {name: _median_seconds(fn, (xs, ys), args.repeats) for name, fn in forms.items()}
    shape = model.trainable_variables[kernels[0]].shape
    out = {"config": vars(args), "kernel": list(shape), "seconds_per_chunk": seconds,
           "x_per_client": {n: s / seconds["per_client"] for n, s in seconds.items()},
           "machine": machine("auto")}
    print(f"{args.model}: {k} clients x {steps} steps x batch {b}, the {shape[0]} x {shape[1]} "
          f"kernel (median of {args.repeats})")
    for name, s in seconds.items():
        print(f"  {name:<24} {s:7.3f} s  {out['x_per_client'][name]:.2f}x per-client")
    print("  " + describe(out["machine"]))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
