"""Does LEAF's Shakespeare LSTM leave the unigram plateau under GDPFed's optimiser?

Plain Keras training, no federation and no noise: the paper's local optimiser (SGD, lr 0.1,
momentum 0.9, batch 4; GDPFed Sec. VI-A) on LEAF's next-character task (the 80 characters
before, the one after) of ``shakespeare-leaf``, from one of three initialisations of the same
model: Keras' defaults (``char_lstm``), LEAF's TensorFlow 1 defaults (glorot-uniform embedding
and combined LSTM kernels, forget bias 1; models/shakespeare/stacked_lstm.py) or PyTorch's
defaults (``char_lstm_torch``). Prints the test loss and accuracy on 3,000 seeded test windows
every 100 steps (``--eval-every``); the plateau is the commonest next character's share
(16.5%, a space).
``--task per-position`` trains TFF's task instead (every one of the 80 positions predicts
the character after it; the accuracy over all positions, and LEAF's, the last position's).

    python scripts/shakespeare_plateau.py --init torch --steps 1500
    python scripts/shakespeare_plateau.py --init torch --task per-position --steps 1500
    python scripts/shakespeare_plateau.py ... --out runs/gdpfed/reports/shakespeare-central/X.csv

``--out`` also writes each evaluation as a CSV row (its first line: the command that made
it), the evidence the write-ups' central-run numbers are read from.

Evidence for docs/gdpfed.md ("Shakespeare: the unigram plateau"); it is not part of a run.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def leaf_tf1_model(vocab: int = 80, hidden: int = 256):
    """LEAF's model with TensorFlow 1's ``get_variable`` default (glorot uniform) on each
    variable as LEAF creates it: the [80, 8] embedding, each BasicLSTMCell's one kernel over
    [input + hidden, 4 hidden] (split here into Keras' kernel and recurrent kernel), the
    dense layer; BasicLSTMCell adds 1 to the forget gate (Keras' unit_forget_bias)."""
    import tensorflow as tf
    L = tf.keras.layers

    def glorot(fan_in, fan_out):
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        return lambda shape, dtype=None: tf.random.uniform(shape, -limit, limit,
                                                           dtype or tf.float32)

    return tf.keras.Sequential([
        tf.keras.Input((80,), dtype=tf.int32),
        L.Embedding(vocab, 8, embeddings_initializer=glorot(vocab, 8)),
        L.LSTM(hidden, return_sequences=True, kernel_initializer=glorot(8 + hidden, 4 * hidden),
               recurrent_initializer=glorot(8 + hidden, 4 * hidden)),
        L.LSTM(hidden, kernel_initializer=glorot(2 * hidden, 4 * hidden),
               recurrent_initializer=glorot(2 * hidden, 4 * hidden)),
        L.Dense(vocab)])


def per_position(model):
    """``model`` with its last LSTM returning every step and the dense layer applied at each
    of the 80 positions (TFF's Shakespeare task: each position predicts the character after
    it, 80 targets a window; tff.simulation.baselines.shakespeare), same weights' shapes."""
    import tensorflow as tf
    embedding, first, last, dense = model.layers        # the same layers and initial draws
    last.return_sequences = True                          # read when the layer is called
    inputs = tf.keras.Input((80,), dtype=tf.int32)
    return tf.keras.Model(inputs, dense(last(first(embedding(inputs)))))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--init", choices=("keras", "leaf", "torch"), default="torch")
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--task", choices=("next", "per-position"), default="next",
                   help="next: LEAF's (the character after the 80); per-position: TFF's "
                   "(each of the 80 positions predicts its next character)")
    p.add_argument("--eval-every", type=int, default=100,
                   help="steps between evaluations (a multiple of 100)")
    p.add_argument("--data-root", default=str(ROOT / "datasets"))
    p.add_argument("--out", help="a CSV file to write each evaluation to (step, losses, "
                   "accuracies, seconds), its first line the command")
    args = p.parse_args(argv)
    if args.steps < 100 or args.batch < 1:
        p.error(f"--steps={args.steps} --batch={args.batch}: need steps >= 100, batch >= 1")
    if args.eval_every < 100 or args.eval_every % 100:
        p.error(f"--eval-every={args.eval_every}: need a multiple of 100")
    import tensorflow as tf
    from tff_idp import models
    from tff_idp.data.shakespeare import pack_texts, read_store, windows_data
    clients = read_store(Path(args.data_root) / "shakespeare-leaf")
    d = windows_data("shakespeare-leaf", pack_texts([c["train"] for c in clients]),
                     pack_texts([c["test"] for c in clients]))
    rng = np.random.default_rng(0)
    train = rng.choice(len(d.y_train), args.batch * args.steps, replace=False)
    test = rng.choice(len(d.y_test), 3000, replace=False)
    def targets(x, y):          # per-position: the window shifted by one, then its next
        x = np.asarray(x, np.int32)
        return x, (y if args.task == "next" else np.concatenate([x[:, 1:], y[:, None]], 1))

    x_test, y_test = targets(d.x_test[test], d.y_test[test])
    tf.keras.utils.set_random_seed(0)
    model = {"keras": lambda: models.build("char_lstm"), "leaf": leaf_tf1_model,
             "torch": lambda: models.build("char_lstm_torch")}[args.init]()
    if args.task == "per-position":
        model = per_position(model)
    model.compile(tf.keras.optimizers.SGD(args.lr, momentum=args.momentum),
                  tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    print(f"init {args.init}; plateau (commonest next character): "
          f"{np.bincount(y_test.ravel()).max() / y_test.size:.3f}", flush=True)
    started = time.perf_counter()
    rows = []
    for k in range(0, args.steps, 100):
        ids = train[k * args.batch:(k + 100) * args.batch]
        h = model.fit(*targets(d.x_train[ids], d.y_train[ids]),
                      batch_size=args.batch, epochs=1, verbose=0)
        if (k + 100) % args.eval_every and k + 100 < args.steps:
            continue
        loss, acc = model.evaluate(x_test, y_test, verbose=0, batch_size=500)
        last, next_acc = "", ""
        if args.task == "per-position":          # LEAF's metric: the 81st character only
            pred = model.predict(x_test, verbose=0, batch_size=500)[:, -1].argmax(-1)
            next_acc = float(np.mean(pred == y_test[:, -1]))
            last = f", next-character accuracy {next_acc:.3f}"
        seconds = time.perf_counter() - started
        print(f"step {k + 100}: train loss {h.history['loss'][0]:.3f}, test loss {loss:.3f}, "
              f"accuracy {acc:.3f}{last} ({seconds:.0f} s)", flush=True)
        rows.append([k + 100, f"{h.history['loss'][0]:.4f}", f"{loss:.4f}", f"{acc:.4f}",
                     "" if next_acc == "" else f"{next_acc:.4f}", f"{seconds:.0f}"])
        if args.out:                             # rewritten whole after every evaluation
            _write_rows(args.out, argv, rows)
    return 0


def _write_rows(path: str, argv, rows) -> None:
    """The evaluations so far as CSV, the command on the first line (atomically)."""
    import csv
    import os
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w", newline="") as f:
        args = sys.argv[1:] if argv is None else list(argv)
        f.write("# python scripts/shakespeare_plateau.py " + " ".join(args) + "\n")
        w = csv.writer(f)
        w.writerow(["step", "train_loss", "test_loss", "test_accuracy",
                    "next_character_accuracy", "seconds"])
        w.writerows(rows)
    os.replace(tmp, out)


if __name__ == "__main__":
    sys.exit(main())
