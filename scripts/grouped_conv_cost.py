"""What per-client weights cost in the fast backend's layers (issues 60 and 79's profile).

The fast backend trains K clients at once with each client's own filters: one grouped
convolution (``feature_group_count = K``, ``engine/cohort_model.py``). The ceiling of
``python -m tff_idp.bench`` trains one shared model on the same K x B examples: a plain
convolution. This times forward and backward (gradients for filters and inputs) of both for
the FMNIST CNNs' two convolutions (``cnn2``: 5x5, 1 -> 32 on 28x28 and 32 -> 64 on 12x12,
valid padding; ``cnn2_same``: the same on 28x28 and 14x14, same padding; the first without
its input's gradient, as in training), and a third form, im2col patches with a batched
matrix product per client, as the alternative a rewrite of the cohort model could take;
and the first dense layer (1024 -> 512 or 3136 -> 512) as a per-client batched matrix
product against one shared matrix.

Each convolution is also split into its three operations (forward, the gradient to the
input, the gradient to the filters), grouped against shared, and the one-input-channel
first layer is timed in two more forms a cohort model could take: a depthwise convolution
(channel multiplier O: the same arithmetic) and the patches taken by a shared convolution
with 25 one-hot filters, multiplied per client, and put back in the cohort's
[B, H, W, K x O] layout (what replacing the grouped form would cost).
Medians of ``--repeats`` calls after one warm-up, all in one process; the ratios are the
result.

    python scripts/grouped_conv_cost.py --out runs/bench/grouped-conv-cost.json
    python scripts/grouped_conv_cost.py --model cnn2_same
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

# each CNN's padding, its convolutions (input side, in channels, out channels) and its first
# dense layer (in, out)
CNNS = {"cnn2": ("VALID", [(28, 1, 32), (12, 32, 64)], (1024, 512)),
        "cnn2_same": ("SAME", [(28, 1, 32), (14, 32, 64)], (3136, 512))}


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


def time_layer(side: int, c: int, o: int, clients: int, batch: int, repeats: int,
               padding: str = "VALID") -> dict:
    """Seconds for one forward and backward pass of one 5x5 convolution, three ways, and
    its operations one by one (``"ops"``)."""
    import tensorflow as tf
    rng = np.random.default_rng(0)
    k, b = clients, batch
    out_side = side - 4 if padding == "VALID" else side

    first = c == 1               # the first layer's input (the data) needs no gradient

    def grad_of(forward, *variables):
        return _forward_backward(forward, variables, input_gradient=not first)

    w = tf.Variable(rng.random((5, 5, c, k * o), dtype=np.float32))
    grouped = grad_of(lambda x: tf.nn.conv2d(x, w, 1, padding), w)
    x_grouped = tf.constant(rng.random((b, side, side, k * c), dtype=np.float32))

    wk = tf.Variable(rng.random((k, 25 * c, o), dtype=np.float32))

    def patches(x):                                # x [K * B, side, side, C]
        p = tf.image.extract_patches(x, [1, 5, 5, 1], [1, 1, 1, 1], [1, 1, 1, 1], padding)
        return tf.matmul(tf.reshape(p, (k, b * out_side * out_side, 25 * c)), wk)
    im2col = grad_of(patches, wk)
    x_clients = tf.constant(rng.random((k * b, side, side, c), dtype=np.float32))

    ws = tf.Variable(rng.random((5, 5, c, o), dtype=np.float32))
    shared = grad_of(lambda x: tf.nn.conv2d(x, ws, 1, padding), ws)

    out = {"grouped": _median_seconds(grouped, x_grouped, repeats),
           "im2col_batched_matmul": _median_seconds(im2col, x_clients, repeats),
           "shared": _median_seconds(shared, x_clients, repeats)}
    out["grouped_x_shared"] = out["grouped"] / out["shared"]
    out["im2col_x_shared"] = out["im2col_batched_matmul"] / out["shared"]
    out["ops"] = _time_ops(x_grouped, w, x_clients, ws, padding, out_side, repeats, first)
    if first:
        out["one_input_channel"] = _time_first_layer_forms(
            x_grouped, w, out_side, padding, repeats, out["grouped"])
    return out


def _time_ops(x_grouped, w, x_clients, ws, padding, out_side, repeats, first) -> dict:
    """Each operation of a convolution alone, grouped (per-client filters) and shared:
    {op: {"grouped", "shared", "grouped_x_shared"}} for forward, input_gradient (not for
    the first layer: training never asks for it) and filter_gradient."""
    import tensorflow as tf
    rng = np.random.default_rng(1)
    dy = {"grouped": tf.constant(rng.random((x_grouped.shape[0], out_side, out_side,
                                             w.shape[-1]), dtype=np.float32)),
          "shared": tf.constant(rng.random((x_clients.shape[0], out_side, out_side,
                                            ws.shape[-1]), dtype=np.float32))}
    args = {"grouped": (x_grouped, w), "shared": (x_clients, ws)}
    forward = tf.function(lambda x, f: tf.nn.conv2d(x, f, 1, padding))
    to_input = tf.function(lambda x, f, g: tf.raw_ops.Conv2DBackpropInput(
        input_sizes=tf.shape(x), filter=f, out_backprop=g, strides=[1, 1, 1, 1],
        padding=padding))
    to_filter = tf.function(lambda x, f, g: tf.raw_ops.Conv2DBackpropFilter(
        input=x, filter_sizes=tf.shape(f), out_backprop=g, strides=[1, 1, 1, 1],
        padding=padding))
    ops = {"forward": lambda x, f, g: forward(x, f), "input_gradient": to_input,
           "filter_gradient": to_filter}
    if first:
        del ops["input_gradient"]
    out = {}
    for name, op in ops.items():
        row = {form: _median_seconds(lambda a: op(*a), (*args[form], dy[form]), repeats)
               for form in ("grouped", "shared")}
        row["grouped_x_shared"] = row["grouped"] / row["shared"]
        out[name] = row
    return out


def _time_first_layer_forms(x_grouped, w, out_side, padding, repeats, grouped) -> dict:
    """The one-input-channel layer's forward pass and filter gradient in two other forms,
    each checked to give the grouped convolution's output: a depthwise convolution (filters
    [5, 5, K, O]), and patches from a shared convolution with 25 one-hot filters times each
    client's [25, O] matrix, put back in the [B, H, W, K x O] layout. Seconds, and each
    against the grouped form (``grouped``: its forward and backward)."""
    import tensorflow as tf
    b, side, k = x_grouped.shape[0], x_grouped.shape[1], x_grouped.shape[3]
    o = w.shape[-1] // k
    one_hot = tf.constant(np.eye(25, dtype=np.float32).reshape(5, 5, 1, 25))

    def depthwise(x, f):
        return tf.nn.depthwise_conv2d(x, tf.reshape(f, [5, 5, k, o]), [1, 1, 1, 1], padding)

    def one_hot_patches(x, f):
        clients_first = tf.reshape(tf.transpose(x, [3, 0, 1, 2]), [k * b, side, side, 1])
        p = tf.reshape(tf.nn.conv2d(clients_first, one_hot, 1, padding),
                       [k, b * out_side * out_side, 25])
        per_client = tf.transpose(tf.reshape(f, [25, k, o]), [1, 0, 2])      # [K, 25, O]
        y = tf.reshape(tf.matmul(p, per_client), [k, b, out_side, out_side, o])
        return tf.reshape(tf.transpose(y, [1, 2, 3, 0, 4]), [b, out_side, out_side, k * o])

    reference = tf.nn.conv2d(x_grouped, w, 1, padding)
    out = {}
    for name, form in (("depthwise", depthwise), ("one_hot_patches", one_hot_patches)):
        y = form(x_grouped, w)
        scale = float(tf.reduce_max(tf.abs(reference)))
        error = float(tf.reduce_max(tf.abs(y - reference))) / scale
        if error > 1e-5:
            raise AssertionError(f"{name} does not compute the grouped convolution "
                                 f"(relative error {error:.2g})")
        seconds = _median_seconds(_forward_backward(lambda x: form(x, w), [w], False),
                                  x_grouped, repeats)
        out[name] = {"seconds": seconds, "x_grouped": seconds / grouped}
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
    p.add_argument("--model", choices=(*CNNS, "char_lstm"), default="cnn2")
    p.add_argument("--clients", type=int, default=64, help="K (the fast backend's chunk)")
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--out", help="a JSON file for the timings and the machine")
    args = p.parse_args(argv)
    from tff_idp.engine.segments import describe, machine
    if args.model in CNNS:
        padding, convs, (i, o) = CNNS[args.model]
        rows = {f"conv {c}->{o} on {s}x{s}": time_layer(s, c, o, args.clients, args.batch,
                                                       args.repeats, padding)
                for s, c, o in convs}
        rows[f"dense {i}->{o}"] = time_dense(i, o, args.clients, args.batch, args.repeats)
        what = f"{args.model}'s convolutions ({padding.lower()} padding) and first dense layer"
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
        for op, t in r.get("ops", {}).items():
            print(f"    {op:<19} grouped {1e3 * t['grouped']:7.1f} ms, shared "
                  f"{1e3 * t['shared']:7.1f} ms ({t['grouped_x_shared']:.2f}x)")
        for form, t in r.get("one_input_channel", {}).items():
            print(f"    as {form:<16} {1e3 * t['seconds']:7.1f} ms forward and backward "
                  f"({t['x_grouped']:.2f}x the grouped convolution)")
    where = machine("auto")
    print("  " + describe(where))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"config": vars(args), "layers": rows,
                                              "machine": where}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
