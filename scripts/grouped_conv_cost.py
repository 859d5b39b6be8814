"""What per-client weights cost in the fast backend's layers (issue 60's profile).

The fast backend trains K clients at once with each client's own filters: one grouped
convolution (``feature_group_count = K``, ``engine/cohort_model.py``). The ceiling of
``python -m tff_idp.bench`` trains one shared model on the same K x B examples: a plain
convolution. This times forward and backward (gradients for filters and inputs) of both for
the FMNIST CNN's two convolutions (``cnn2``: 5x5, 1 -> 32 on 28x28 and 32 -> 64 on 12x12;
the first without its input's gradient, as in training),
and a third form, im2col patches with a batched matrix product per client, as the
alternative a rewrite of the cohort model could take; and the first dense layer (1024 -> 512,
90% of the parameters) as a per-client batched matrix product against one shared matrix.
Medians of ``--repeats`` calls after one warm-up, all in one process; the ratios are the
result.

    python scripts/grouped_conv_cost.py --out runs/bench/grouped-conv-cost.json
    python scripts/grouped_conv_cost.py --model char_lstm --batch 4

``--model char_lstm``: the Shakespeare LSTM's matrix products of one time step (each LSTM
layer's recurrent kernel, 256 -> 4 x 256, and the second layer's input kernel, the same
shape; 80 such steps a batch), per-client against shared, at the setting's batch of 4.
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

LAYERS = [(28, 1, 32), (12, 32, 64)]     # (input side, in channels, out channels) of cnn2


def _median_seconds(fn, arg, repeats: int) -> float:
    fn(arg)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def _forward_backward(forward, variables, input_gradient: bool = True):
    """A tf.function taking ``x`` to the gradients of sum(forward(x)^2) for ``variables``
    (and for ``x`` itself unless ``input_gradient`` is False): one forward and backward pass."""
    import tensorflow as tf

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = forward(x)
            loss = tf.reduce_sum(y * y)
        return tape.gradient(loss, [x, *variables] if input_gradient else list(variables))
    return step


def time_layer(side: int, c: int, o: int, clients: int, batch: int, repeats: int) -> dict:
    """Seconds for one forward and backward pass of one layer, three ways."""
    import tensorflow as tf
    rng = np.random.default_rng(0)
    k, b, out_side = clients, batch, side - 4

    first = c == 1               # the first layer's input (the data) needs no gradient

    def grad_of(forward, *variables):
        return _forward_backward(forward, variables, input_gradient=not first)

    w = tf.Variable(rng.random((5, 5, c, k * o), dtype=np.float32))
    grouped = grad_of(lambda x: tf.nn.conv2d(x, w, 1, "VALID"), w)
    x_grouped = tf.constant(rng.random((b, side, side, k * c), dtype=np.float32))

    wk = tf.Variable(rng.random((k, 25 * c, o), dtype=np.float32))

    def patches(x):                                # x [K * B, side, side, C]
        p = tf.image.extract_patches(x, [1, 5, 5, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID")
        return tf.matmul(tf.reshape(p, (k, b * out_side * out_side, 25 * c)), wk)
    im2col = grad_of(patches, wk)
    x_clients = tf.constant(rng.random((k * b, side, side, c), dtype=np.float32))

    ws = tf.Variable(rng.random((5, 5, c, o), dtype=np.float32))
    shared = grad_of(lambda x: tf.nn.conv2d(x, ws, 1, "VALID"), ws)

    out = {"grouped": _median_seconds(grouped, x_grouped, repeats),
           "im2col_batched_matmul": _median_seconds(im2col, x_clients, repeats),
           "shared": _median_seconds(shared, x_clients, repeats)}
    out["grouped_x_shared"] = out["grouped"] / out["shared"]
    out["im2col_x_shared"] = out["im2col_batched_matmul"] / out["shared"]
    return out


def time_dense(i: int, o: int, clients: int, batch: int, repeats: int) -> dict:
    """The same for a dense layer: each client's own [i, o] matrix (a batched matrix
    product, ``CohortModel``'s form) against one shared matrix on the K x B rows."""
    import tensorflow as tf
    rng = np.random.default_rng(0)
    k, b = clients, batch
    wk = tf.Variable(rng.random((k, i, o), dtype=np.float32))
    ws = tf.Variable(rng.random((i, o), dtype=np.float32))
    per_client = _median_seconds(_forward_backward(lambda x: tf.matmul(x, wk), [wk]),
                                 tf.constant(rng.random((k, b, i), dtype=np.float32)), repeats)
    shared = _median_seconds(_forward_backward(lambda x: tf.matmul(x, ws), [ws]),
                             tf.constant(rng.random((k * b, i), dtype=np.float32)), repeats)
    return {"grouped": per_client, "shared": shared, "grouped_x_shared": per_client / shared}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("cnn2", "char_lstm"), default="cnn2")
    p.add_argument("--clients", type=int, default=64, help="K (the fast backend's chunk)")
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--out", help="a JSON file for the timings and the machine")
    args = p.parse_args(argv)
    from tff_idp.engine.segments import describe, machine
    if args.model == "cnn2":
        rows = {f"conv {c}->{o} on {s}x{s}": time_layer(s, c, o, args.clients, args.batch,
                                                       args.repeats) for s, c, o in LAYERS}
        rows["dense 1024->512"] = time_dense(1024, 512, args.clients, args.batch, args.repeats)
        what = "cnn2's convolutions and first dense layer"
    else:
        rows = {"lstm kernel 256->1024": time_dense(256, 1024, args.clients, args.batch,
                                                    args.repeats)}
        what = "the LSTM's matrix product of one time step"
    print(f"{what}, {args.clients} clients x batch {args.batch}, forward and backward, "
          f"median of {args.repeats}:")
    for name, r in rows.items():
        other = (f", im2col + batched matmul {1e3 * r['im2col_batched_matmul']:7.1f} ms "
                 f"({r['im2col_x_shared']:.2f}x)" if "im2col_x_shared" in r else "")
        print(f"  {name:<21} per-client weights {1e3 * r['grouped']:7.1f} ms "
              f"({r['grouped_x_shared']:.2f}x shared){other}, shared {1e3 * r['shared']:7.1f} ms")
    where = machine("auto")
    print("  " + describe(where))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"config": vars(args), "layers": rows,
                                              "machine": where}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
