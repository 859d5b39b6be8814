"""python -m tff_idp.bench: seconds per round of stock TFF, our TFF backend, our fast backend
(clients drawing their noise shares, or the server drawing each group's noise) and the
compute ceiling, on one configuration, in one process.

Default: GDPFed's FMNIST setting (2-layer CNN of 582k parameters, 120 clients per round,
5 local steps, batch 10) on synthetic 28x28x1 inputs. ``--model char_lstm``: its Shakespeare
setting (Table I: 71 clients per round = 10% of 712, 30 local steps of batch 4, momentum 0.9)
on synthetic 80-character sequences (``--model char_lstm_torch``: the same layers with PyTorch's
initialisers; ``--sequence-targets``: a target at every position, TFF's task, which the
Shakespeare cells run), and the ``eval`` runner times evaluation's forward pass
over ``--eval-examples`` test sequences (shared weights, the engine's ``evaluate``).
``--peers pfl`` also times pfl-research's simulated FedAvg with its central Gaussian
mechanism on the same workload (``tff_idp/peers/pfl_round.py``, run in the environment
``scripts/peer_env.sh`` makes), and gives each runner's time over the peer's. Each
runner gets ``--warmup`` rounds, then ``--rounds`` timed rounds on the same cohort. The ceiling is the same number of
example-steps as plain TF training steps at batch ``clients * batch``. Prints a table, writes
JSON (seconds per round, ratios, peak memory).

``--method NAME`` (e.g. ``dp_pfeddsu``) times one round of that method instead: CIFAR-10's
shape (synthetic 32x32x3 images, ``--model`` default resnet20, ``--clients`` 20, every
client in the round, its phases as the method defines them with ``--epochs`` extractor and
``--head-epochs`` head epochs, 001's 5 and 15 by default) on the fast backend with the round's clients trained
together (cohort mode) against the same backend training them one after another
(client-loop mode): same data, same noise seeds.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import resource
import sys
import time
import types
from pathlib import Path

import numpy as np

from .engine.segments import describe as where, machine


# stock TFF; our TFF backend; our fast backend with each client drawing its noise share
# (noise_draw="client"), the clients' shares drawn as one sum per group
# (fast_noise_shares="summed"), the server drawing each group's noise (noise_draw="group"),
# and with every Dense kernel a matrix per client (fast_dense_updates="per_client": the path
# before the low-rank updates, engine.low_rank; the others take the config's "auto");
# the fast backend's client training alone (the profile's first part: ours_fast minus it is
# clip, noise, sums and the Python between chunks); plain TF training of the same
# example-steps
RUNNERS = ("stock", "tff", "fast", "fast_summed", "fast_group", "fast_per_client", "fast_train",
           "ceiling", "eval")
IMAGE_MODELS = ("cnn2", "cnn2_same", "cnn3", "simple_cnn", "resnet18", "resnet20")
# per model: (clients per round, local steps, batch, momentum) of its GDPFed Table I column
SETTINGS = {"char_lstm": (71, 30, 4, 0.9), "char_lstm_torch": (71, 30, 4, 0.9)}
TEXT_MODELS = tuple(SETTINGS)
FMNIST_SETTING = (120, 5, 10, 0.0)
# peer frameworks (--peers): each one's workload file under tff_idp/peers/, run with the
# Python of its own environment, and the models it builds
PEERS = {"pfl": ("pfl_round.py", ("cnn2", "cnn2_same", "char_lstm"))}
PEER_ENV = Path(__file__).resolve().parents[1] / ".venv-peers"


def peer_python() -> Path:
    """The peer environment's Python (``$TFF_IDP_PEER_ENV``, else ``.venv-peers/`` of the
    project, made by ``scripts/peer_env.sh``)."""
    return Path(os.environ.get("TFF_IDP_PEER_ENV") or PEER_ENV) / "bin" / "python"


def _clients_and_lanes(item: str):
    """One --chunk item: "8" -> (8, 1), "8x2" -> (8, 2); ValueError otherwise."""
    clients, *lanes = item.split("x")
    if len(lanes) > 1:
        raise ValueError(item)
    return int(clients), int(lanes[0]) if lanes else 1


def _bad_argument(args):
    """The first bad flag as one line ("--key=value: why"), or None; checked before
    TensorFlow is imported."""
    from . import models
    if args.model is not None and args.model not in models.MODELS:
        return f"--model={args.model!r}: choose from {', '.join(sorted(models.MODELS))}"
    if args.method is None and args.model not in (None,) + TEXT_MODELS + IMAGE_MODELS:
        return (f"--model={args.model!r}: the bench has inputs for image models, "
                f"{' and '.join(TEXT_MODELS)} only")
    if args.sequence_targets and args.model not in TEXT_MODELS:
        return (f"--sequence-targets: needs --model {' or '.join(TEXT_MODELS)}, "
                f"not {args.model or 'cnn2'!r}")
    args.chunks = None                 # the config's (fast_chunk_size, fast_lanes)
    if args.chunk is not None:
        try:
            args.chunks = [_clients_and_lanes(c) for c in args.chunk.split(",")]
        except ValueError:
            return (f"--chunk={args.chunk!r}: expected a number of clients, CLIENTSxLANES "
                    "(8x2) or a comma list of them (4,8x2,128)")
        if min(min(c) for c in args.chunks) < 1:
            return f"--chunk={args.chunk}: must be >= 1"
    if args.unrolled_steps is not None and args.unrolled_steps < 0:
        return f"--unrolled-steps={args.unrolled_steps}: must be >= 0"
    for key in ("clients", "steps", "batch", "rounds", "epochs", "head_epochs",
                "eval_examples"):
        value = getattr(args, key)
        if value is not None and value < 1:
            return f"--{key.replace('_', '-')}={value}: must be >= 1"
    if args.warmup < 0:
        return f"--warmup={args.warmup}: must be >= 0"
    args.peer_list = [x for x in (args.peers or "").split(",") if x]
    for peer in args.peer_list:
        if peer not in PEERS:
            return f"--peers={args.peers!r}: peers are {', '.join(PEERS)}"
        if args.method is not None or args.sequence_targets or \
                (args.model or "cnn2") not in PEERS[peer][1]:
            return (f"--peers={peer}: its workload builds {', '.join(PEERS[peer][1])} "
                    "(a target after the last character) only, not "
                    f"{args.method or args.model or 'cnn2'!r}"
                    + (" with --sequence-targets" if args.sequence_targets else ""))
        if not peer_python().is_file():
            return (f"--peers={peer}: no peer environment at {peer_python().parents[1]}; "
                    "create it with: bash scripts/peer_env.sh")
        why = _peer_unusable(peer)
        if why:
            return f"--peers={peer}: {why}"
    from .atomic import check_writable_dir
    from .config import ConfigError
    try:                                # where the JSON goes, before minutes of work
        check_writable_dir("--out", str(Path(args.out).parent))
    except ConfigError as e:
        return str(e)
    if Path(args.out).is_dir():
        return f"--out={args.out!r}: is a folder; give the JSON file's path"
    return _memory_refusal(args)


def _input_shape(model: str):
    """The shape of one synthetic input the bench makes for ``model``: LEAF's 80 symbols,
    FMNIST's 28x28x1 or CIFAR's 32x32x3."""
    if model in TEXT_MODELS:
        return (80,)
    return (28, 28, 1) if model in ("cnn2", "cnn2_same") else (32, 32, 3)


def _memory_refusal(args):
    """One line when the bench's synthetic round cannot fit: its inputs for clients x steps
    x batch examples (4 bytes a value, inputs and targets), held twice (the arrays and stock
    TFF's datasets)."""
    from .engine.memory import REFUSE_ABOVE, machine_memory_bytes
    model = args.model or ("resnet20" if args.method else "cnn2")
    clients, steps, batch, _ = SETTINGS.get(model, FMNIST_SETTING)
    k = args.clients or clients
    examples = k * (args.steps or steps) * (args.batch or batch)
    shape = _input_shape(model)
    per_example = 4 * (int(np.prod(shape)) + (shape[0] if model in TEXT_MODELS else 1))
    need, have = 2 * examples * per_example, machine_memory_bytes()
    if need > REFUSE_ABOVE * have:
        return (f"--clients={k}, --steps={args.steps or steps}, --batch={args.batch or batch}: "
                f"{examples:,} examples need at least {need / 2 ** 30:.3g} GB; this machine "
                f"has {have / 2 ** 30:.3g} GB")
    return None


def _timed(fn, warmup, rounds):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), times


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tff_idp.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None,
                   help="model (default cnn2; resnet20 with --method)")
    p.add_argument("--clients", type=int, default=None,
                   help="clients per round (default 120; 20 with --method)")
    p.add_argument("--method", default=None,
                   help="time one round of this method: cohort mode against client-loop "
                        "mode of the fast backend (module docstring)")
    p.add_argument("--epochs", type=int, default=5,
                   help="--method: local (extractor) epochs per round (paper 001: 5)")
    p.add_argument("--head-epochs", type=int, default=15,
                   help="--method: head fine-tuning epochs per round (paper 001: 15)")
    p.add_argument("--steps", type=int, default=None,
                   help="local steps per client (default 5; char_lstm(_torch) 30)")
    p.add_argument("--batch", type=int, default=None,
                   help="client batch size (default 10; char_lstm(_torch) 4)")
    p.add_argument("--chunk", default=None,
                   help="fast backend: clients trained at once (fast_chunk_size; default 64), "
                        "or CLIENTSxLANES (8x2: 8 clients in 2 lanes, fast_lanes); a comma "
                        "list (4,8x2,128) times the fast runners at each, as ours_fast@4, "
                        "ours_fast@8x2, ours_fast@128")
    p.add_argument("--sequence-targets", action="store_true",
                   help="char_lstm(_torch): a target at every one of the 80 positions "
                        "(TFF's task, the Shakespeare cells'), not only after the last")
    p.add_argument("--eval-examples", type=int, default=10_000,
                   help="eval runner: test examples evaluated (default 10000)")
    p.add_argument("--rounds", type=int, default=3,
                   help="timed rounds per runner; the median is reported (default 3)")
    p.add_argument("--warmup", type=int, default=1,
                   help="untimed rounds per runner first (tracing; default 1)")
    p.add_argument("--only", default=",".join(RUNNERS),
                   help="comma list of runners to time: " + ", ".join(RUNNERS))
    p.add_argument("--peers", default=None,
                   help="also time a peer framework on the same workload, in its own "
                   "environment (pfl: pfl-research's FedAvg with its central Gaussian "
                   "mechanism; scripts/peer_env.sh makes .venv-peers)")
    p.add_argument("--unrolled-steps", type=int, default=None,
                   help="write out a phase of at most this many local steps known when "
                   "traced, instead of a while loop (client_work.UNROLLED_STEPS, default "
                   "8; 0: every phase in a while loop, as before 2026-12-05)")
    p.add_argument("--out", default="results/bench.json", help="where the JSON goes")
    args = p.parse_args(argv)
    why = _bad_argument(args)
    if why is not None:
        print(f"error: {why}", file=sys.stderr)
        return 2
    from .runtime import quiet_tf_logs
    quiet_tf_logs()                                  # before TensorFlow is imported
    if args.method is not None:
        from .methods import METHODS
        if args.method not in METHODS:
            print(f"error: --method={args.method!r}: choose from {', '.join(sorted(METHODS))}",
                  file=sys.stderr)
            return 2
        args.model = args.model or "resnet20"
        args.clients = args.clients or 20
        from .runtime import close_tff
        try:
            return _bench_method(args)
        finally:
            close_tff()
    args.model = args.model or "cnn2"
    clients, steps, batch, args.momentum = SETTINGS.get(args.model, FMNIST_SETTING)
    args.clients, args.steps = args.clients or clients, args.steps or steps
    args.batch = args.batch or batch
    only = set(args.only.split(","))
    if not only <= set(RUNNERS):
        print(f"error: --only={args.only!r}: runners are {', '.join(RUNNERS)}", file=sys.stderr)
        return 2
    from .runtime import close_tff, import_tff, one_thread_per_op_for_lanes
    lanes = max(lane for _, lane in args.chunks or [(0, 1)])
    args.one_thread_per_op = one_thread_per_op_for_lanes(     # as `run` does, before TF starts
        [types.SimpleNamespace(backend="fast", fast_lanes=lanes, device="auto")])
    try:
        return _bench(args, only, import_tff())
    except RuntimeError as e:          # a peer's workload failed: its last line
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        close_tff()


def _bench(args, only, tff):
    import tensorflow as tf
    from .algorithms import client_work
    if args.unrolled_steps is not None:
        client_work.UNROLLED_STEPS = args.unrolled_steps
    args.unrolled_steps = client_work.UNROLLED_STEPS      # what ran, in the JSON's config
    from . import experiment_config, models
    from .aggregators import GroupGaussianFactory
    from .engine.backends import FastBackend, TFFBackend
    k, steps, b = args.clients, args.steps, args.batch
    rng = np.random.default_rng(0)
    targets = ()
    shape = _input_shape(args.model)
    if args.model in TEXT_MODELS:          # LEAF's 80 symbols, sequences of 80
        dtype, classes = tf.int32, 80
        xs = rng.integers(0, classes, (k, steps * b) + shape).astype(np.int32)
        targets = shape if args.sequence_targets else ()
        model_fn = lambda: models.build(args.model, sequence_targets=args.sequence_targets)
    else:
        dtype, classes = tf.float32, 10
        xs = rng.random((k, steps * b) + shape, dtype=np.float32)
        model_fn = lambda: models.build(args.model, input_shape=shape)
    ys = rng.integers(0, classes, (k, steps * b) + targets).astype(np.int32)
    tf.keras.utils.set_random_seed(0)
    w0 = model_fn().get_weights()
    spec = (tf.TensorSpec((b,) + shape, dtype), tf.TensorSpec((b,) + targets, tf.int32))
    examples = [(xs[i], ys[i]) for i in range(k)]      # what the round loop hands a backend
    datasets = [tf.data.Dataset.from_tensor_slices((xs[i], ys[i])).batch(b, drop_remainder=True)
                for i in range(k)]                      # stock TFF's input, built untimed
    infos = [collections.OrderedDict(group=np.ones(1, np.float32),
                                     seed=np.array([0, i], np.int32), slot=np.int32(-1))
             for i in range(k)]
    cfg = experiment_config.load(None, [f"local_steps={steps}", f"batch_size={b}", "lr_decay=1.0",
                             f"momentum={args.momentum}"])
    results = {}

    if "stock" in only:
        def tff_model():
            return tff.learning.models.from_keras_model(
                model_fn(), loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                input_spec=spec)
        agg = tff.aggregators.DifferentiallyPrivateFactory.gaussian_fixed(
            noise_multiplier=1.0, clients_per_round=float(k), clip=1.0)
        stock = tff.learning.algorithms.build_unweighted_fed_avg(
            tff_model, client_optimizer_fn=tff.learning.optimizers.build_sgdm(
                0.1, momentum=args.momentum or None),
            server_optimizer_fn=tff.learning.optimizers.build_sgdm(1.0), model_aggregator=agg)
        state = [stock.initialize()]
        results["stock_tff"] = _timed(
            lambda: state.__setitem__(0, stock.next(state[0], datasets).state),
            args.warmup, args.rounds)

    from .algorithms.client_work import ClientProgram
    from .algorithms.plan import PrivacySetting
    from .methods.gdpfed import plan_dp_fedavg
    from .methods import METHODS
    from .models.split import split_model
    setting = PrivacySetting([1.0], [k], 1e-5, 10, 1.0, 1.0)
    plan = plan_dp_fedavg(setting, noise_multiplier=1.0)
    method = METHODS["dp_fedavg"]
    program = ClientProgram(method.phases(cfg), split_model(model_fn(), "none"),
                            method.client_output, method.server_update)
    modes = {}
    chunks = args.chunks or [(cfg.fast_chunk_size, cfg.fast_lanes)]
    for name, cls, draw in (("tff", TFFBackend, "client"), ("fast", FastBackend, "client"),
                            ("fast_summed", FastBackend, "client"),
                            ("fast_group", FastBackend, "group"),
                            ("fast_per_client", FastBackend, "client")):
        if name not in only:
            continue
        dense = "per_client" if name == "fast_per_client" else cfg.fast_dense_updates
        shares = "summed" if name == "fast_summed" else cfg.fast_noise_shares
        fast = cls is FastBackend
        for chunk, lanes in chunks if fast else chunks[:1]:
            label = f"ours_{name}" + (f"@{chunk}" + (f"x{lanes}" if lanes > 1 else "")
                                      if fast and len(chunks) > 1 else "")
            factory = GroupGaussianFactory(plan.clips, plan.noise_stddevs, [float(k)], [1.0],
                                           noise_draw=draw)
            runner = cls(dataclasses.replace(cfg, fast_chunk_size=chunk, fast_lanes=lanes,
                                             fast_dense_updates=dense,
                                             fast_noise_shares=shares),
                         plan, model_fn, w0, factory, spec, program)
            modes[label] = runner.mode + (f", low-rank kernels {runner.factored}"
                                          if fast and runner.factored else "")
            results[label] = _timed(lambda: runner.step([examples], infos, 0),
                                    args.warmup, args.rounds)

    if "fast_train" in only:         # the fast runner's local training alone (the backend's
        for chunk, lanes in chunks:  # own, FastBackend.train_chunks), at each chunking
            label = "fast_train" + (f"@{chunk}" + (f"x{lanes}" if lanes > 1 else "")
                                    if len(chunks) > 1 else "")
            factory = GroupGaussianFactory(plan.clips, plan.noise_stddevs, [float(k)], [1.0])
            runner = FastBackend(dataclasses.replace(cfg, fast_chunk_size=chunk,
                                                     fast_lanes=lanes),
                                 plan, model_fn, w0, factory, spec, program)
            results[label] = _timed(lambda: runner.train_chunks([examples]),
                                    args.warmup, args.rounds)

    if "ceiling" in only:
        model = model_fn()
        opt = tf.keras.optimizers.SGD(0.1, momentum=args.momentum)
        big_x = xs.reshape((k * steps, b) + shape).reshape((steps, k * b) + shape)
        big_y = ys.reshape((steps, k * b) + targets)

        @tf.function
        def one_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
                    y, model(x, training=True), from_logits=True))
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                    model.trainable_variables))

        def ceiling_round():
            for s in range(steps):
                one_step(big_x[s], big_y[s])
        results["ceiling"] = _timed(ceiling_round, args.warmup, args.rounds)
        if args.one_thread_per_op:     # the ceiling at its best: TF's default threads too
            results["ceiling_default_threads"] = _ceiling_at_default_threads(args)

    if "eval" in only:                    # evaluation's forward pass, shared weights
        from .engine.evaluation import evaluate
        model = model_fn()
        n = args.eval_examples
        x_test = (rng.integers(0, classes, (n,) + shape).astype(np.int32)
                  if dtype == tf.int32 else rng.random((n,) + shape, dtype=np.float32))
        y_test = rng.integers(0, classes, (n,) + targets).astype(np.int32)
        lanes = (max(lane for _, lane in args.chunks or [(0, 1)])   # in lanes, as `run`
                 if args.one_thread_per_op else 1)                 # evaluates in them
        results["eval"] = _timed(lambda: evaluate(model, x_test, y_test, lanes=lanes),
                                 args.warmup, args.rounds)

    for peer in args.peer_list:
        results[peer] = _peer_round(peer, args)

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {"config": vars(args), "seconds_per_round": {n: r[0] for n, r in results.items()},
           "all_rounds": {n: r[1] for n, r in results.items()}, "peak_rss_mb": peak_mb,
           "example_steps_per_round": k * steps * b, "modes": modes,
           "tf_num_intraop_threads": os.environ.get("TF_NUM_INTRAOP_THREADS"),
           "machine": machine("auto")}
    if args.peer_list:           # the peer's own setting (None: TensorFlow's default)
        out["peer_tf_num_intraop_threads"] = _peer_env(args.one_thread_per_op).get(
            "TF_NUM_INTRAOP_THREADS")
    sec = out["seconds_per_round"]
    if "eval" in sec:
        out["eval_seconds_per_1000"] = 1000 * sec.pop("eval") / args.eval_examples
    if "stock_tff" in sec:
        out["speedup_vs_stock"] = {n: sec["stock_tff"] / s for n, s in sec.items()}
    if "ceiling" in sec:             # the faster of its two thread settings (lanes)
        best = min(sec["ceiling"], sec.get("ceiling_default_threads", sec["ceiling"]))
        out["x_ceiling"] = {n: s / best for n, s in sec.items()}
    for peer in args.peer_list:         # our time over the peer's: below 1 is faster
        out[f"x_{peer}"] = {n: s / sec[peer] for n, s in sec.items()}
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    task = ", a target at every position" if targets else ""
    print(f"{args.model}{task}: {k} clients x {steps} steps x batch {b} per round "
          f"(median of {args.rounds} after {args.warmup} warm-up)")
    for n, s in sec.items():
        extra = []
        if "speedup_vs_stock" in out:
            extra.append(f"{out['speedup_vs_stock'][n]:.2f}x faster than stock")
        if "x_ceiling" in out:
            extra.append(f"{out['x_ceiling'][n]:.2f}x the ceiling")
        extra += [f"{out[f'x_{peer}'][n]:.2f}x {peer}'s time" for peer in args.peer_list
                  if n != peer]
        mode = f" ({modes[n]})" if n in modes else ""
        print(f"  {n:<16} {s:8.3f} s/round  " + ", ".join(extra) + mode)
    if "eval_seconds_per_1000" in out:
        print(f"  evaluation       {out['eval_seconds_per_1000']:8.3f} s per 1,000 test "
              f"examples (median of {args.rounds} passes over {args.eval_examples})")
    print(f"  peak RSS {peak_mb:.0f} MB -> {path}")
    print("  " + where(out["machine"]))
    if args.one_thread_per_op:
        print("  every runner above ran with one intra-op thread (TF_NUM_INTRAOP_THREADS=1, "
              "as `run` sets it for fast_lanes > 1) but ceiling_default_threads (the ceiling "
              "in a process of its own at TensorFlow's default); the ratios are to the "
              "faster ceiling")
    return 0


def _peer_command(peer: str, *flags: str) -> list:
    return [str(peer_python()), str(Path(__file__).resolve().parent / "peers" / PEERS[peer][0]),
            *flags]


def _peer_env(own_threads: bool = False) -> dict:
    """The peer's environment: ours without PYTHONPATH (its TensorFlow is not ours) and,
    with ``own_threads`` (the bench set one intra-op thread for its lanes), without
    ``TF_NUM_INTRAOP_THREADS``: the peer runs at TensorFlow's default threads, as a user
    runs it and as :func:`_ceiling_at_default_threads` runs the ceiling, not at the setting
    our lanes need (which slowed pfl's round in the lanes benches before 2026-12-04)."""
    drop = {"PYTHONPATH"} | ({"TF_NUM_INTRAOP_THREADS"} if own_threads else set())
    return {k: v for k, v in os.environ.items() if k not in drop} | {
        "TF_CPP_MIN_LOG_LEVEL": "2"}


def _last_line(done) -> str:
    """A failed peer process's last line of error."""
    return (done.stderr.strip().splitlines() or ["no output"])[-1]


def _peer_unusable(peer: str):
    """Why the peer's environment cannot run its workload (its last line of error), or None:
    its imports are tried before any work."""
    import subprocess
    done = subprocess.run(_peer_command(peer, "--check"), capture_output=True, text=True,
                          env=_peer_env())
    if done.returncode == 0:
        return None
    return f"the peer environment at {peer_python().parents[1]} cannot run it ({_last_line(done)})"


def _peer_round(peer: str, args):
    """(median seconds per round, every timed round) of ``peer``'s workload on this
    workload (same model, cohort, steps, batch, learning rate and momentum; clip and noise
    multiplier 1.0, as our runners), run in its own environment; RuntimeError with its last
    line when it fails."""
    import subprocess
    cmd = _peer_command(peer, "--model", args.model, "--clients", str(args.clients),
                        "--steps", str(args.steps), "--batch", str(args.batch), "--lr", "0.1",
                        "--momentum", str(args.momentum or 0.0),
                        "--clip", "1.0", "--noise-multiplier", "1.0",
                        "--rounds", str(args.rounds), "--warmup", str(args.warmup))
    done = subprocess.run(cmd, capture_output=True, text=True,
                          env=_peer_env(args.one_thread_per_op))
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"--peers={peer}: its workload failed: {_last_line(done)}")
    got = json.loads(lines[-1])
    return got["seconds_per_round"], got["rounds"]


def _ceiling_at_default_threads(args):
    """(median seconds per round, every timed round) of the ceiling on the same workload in
    a child process at TensorFlow's default intra-op threads: a run with lanes sets one
    thread per operation for the whole process, which is not the ceiling's best setting
    (on 2 cores the shared model's steps use both)."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ceiling.json"
        cmd = [sys.executable, "-m", "tff_idp.bench", "--model", args.model, "--clients",
               str(args.clients), "--steps", str(args.steps), "--batch", str(args.batch),
               "--rounds", str(args.rounds), "--warmup", str(args.warmup), "--only",
               "ceiling", "--out", str(out)] + (["--sequence-targets"]
                                                if args.sequence_targets else [])
        env = {k: v for k, v in os.environ.items() if k != "TF_NUM_INTRAOP_THREADS"}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"the ceiling at default threads failed: {_last_line(done)}")
        got = json.loads(out.read_text())
    return got["seconds_per_round"]["ceiling"], got["all_rounds"]["ceiling"]


def _bench_method(args) -> int:
    """One round of ``args.method`` on CIFAR-10's shape: fast backend, cohort mode against
    client-loop mode (module docstring)."""
    from . import experiment_config
    from .engine import client_data, loop
    from .engine.experiment import prepare
    cfg = experiment_config.load(None, [
        f'methods=["{args.method}"]', 'dataset="synthetic:cifar10"', f'model="{args.model}"',
        f"num_clients={args.clients}", "expected_rate=1.0", "group_ratios=[1.0]",
        "budgets=[1.0]", "delta=1e-5", 'partition="dealt_classes"', "partition_param=5",
        f"local_epochs={args.epochs}", f"head_epochs={args.head_epochs}",
        f"ppsgd_head_epochs={args.head_epochs}", f"batch_size={args.batch}", "clip=0.01",
        "local_lr=0.01", "momentum=0.9", "weight_decay=1e-4", 'backend="fast"',
        "lr_decay=1.0", "rounds=10"])
    exp = prepare(cfg, persist=False)
    results, modes = {}, {}
    for mode in ("cohort", "client-loop"):
        # the same backend, with the clients trained one after another in client-loop mode
        runner, spec, w0 = loop.make_runner(exp, args.method, "fast", mode=mode)
        program = spec.program
        store = loop.PersonalStore(w0, program.split, cfg.num_clients)
        ids = list(range(cfg.num_clients))
        batches = [[client_data.phase_examples(exp, c, 0, ph, p) for c in ids]
                   for p, ph in enumerate(program.phases)]
        infos = [collections.OrderedDict(group=np.ones(1, np.float32),
                                         seed=np.array([0, c], np.int32), slot=np.int32(-1))
                 for c in ids]
        results[mode] = _timed(lambda: runner.step(batches, infos, 0, store.gather(ids)),
                               args.warmup, args.rounds)
        modes[mode] = runner.mode
    sec = {m: r[0] for m, r in results.items()}
    ratio = sec["client-loop"] / sec["cohort"]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    examples = sum(len(i) for i in exp.client_indices)
    out = {"config": vars(args), "seconds_per_round": sec,
           "all_rounds": {m: r[1] for m, r in results.items()},
           "cohort_faster_by": ratio, "peak_rss_mb": peak_mb, "modes": modes,
           "training_examples": examples, "machine": machine("auto")}
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"{args.method} on {args.model}: {args.clients} clients x {examples // args.clients} "
          f"examples, {args.epochs} local + {args.head_epochs} head epochs, batch "
          f"{args.batch} (median of {args.rounds} rounds after {args.warmup} warm-up)")
    for m, x in sec.items():
        print(f"  {m:<12} {x:8.3f} s/round")
    print(f"  cohort mode is {ratio:.2f}x faster than clients one after another; peak RSS "
          f"{peak_mb:.0f} MB -> {path}")
    print("  " + where(out["machine"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
