"""The round loop: one method of an :class:`Experiment`, round by round, on a backend. It
names no method: what differs between methods comes from their plug-ins
(``tff_idp.methods``).

Per round: sample the cohort per group (``tff_idp.sampling``), draw each sampled client's
examples of each local phase in training order (``client_data``: permutations seeded by
(seed, round, client[, phase])), gather the cohort's personal rows (``personal_state``), let
the backend (``backends.TFFBackend`` or ``backends.FastBackend``) run the round (client work,
clip and noise of the shared part, aggregation, server update), write the personal rows
back, evaluate (``evaluation``: the global model, or each client's own model), record the
round in the ledger. A round whose cohort is empty (possible with Poisson sampling) still
runs through the backend's aggregator, which releases every private group's noise on zero
sums (``GroupGaussianFactory``; an un-noised empty round would leak whether the target client
was sampled); personal parts stay as they are, and the round is recorded with ``cohort`` 0.
An aggregator with ``noise_in_empty_rounds = False`` (local DP, MS-PAFL) keeps the model.
"""
from __future__ import annotations

import collections
import dataclasses
import sys
import time
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import tensorflow as tf
from tqdm.auto import tqdm

from ..config import ConfigError
from ..methods import METHODS
from ..methods.base import RoundSpec
from ..results.summary import RunSummary
from ..errors import RoundInterrupted, RunDiverged
from ..runtime import StopRequests, in_lanes_on_cpu
from ..sampling import sample_cohort
from .backends import BACKENDS, client_diagnostics
from .checkpoint import load_checkpoint, save_checkpoint, write_heartbeat
from .client_data import input_dtype, phase_examples
from .evaluation import (ClientExamples, PersonalEvaluation, ReadoutFineTune, client_test_sets,
                         evaluate)
from ..planning import plan_summary
from .experiment import Experiment, model_builder
from .fingerprint import method_key, run_fingerprint
from .memory import peak_rss_bytes, reset_peak_rss
from .personal_state import PersonalStore
from .run_state import RunState
from .segments import SegmentLog


GROUP_NOISE_STREAM = 1 << 30      # the third part of the group-noise base seed (rounds < it)
CANARY_STREAM = (1 << 30) + 1     # ... and of the canaries' seed


def _seed32(*parts) -> int:
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0] % (2**31 - 1))


def build_model_fn(exp: Experiment, method: Optional[str] = None
                   ) -> Callable[[], tf.keras.Model]:
    """The config's model (as ``method``'s plug-in builds on it: PPSGD's additive head)."""
    base = model_builder(exp.cfg, exp.data)
    plugin = METHODS[method] if method is not None else None

    def build():
        model = base()
        return model if plugin is None else plugin.build_model(model)
    return build


def initial_weights(exp: Experiment, model_fn):
    tf.keras.utils.set_random_seed(exp.cfg.seed)
    return model_fn().get_weights()


def round_spec(exp: Experiment, method: str, model) -> RoundSpec:
    """``method`` built whole for this run on ``model`` (``Method.build``): the server's
    noise seeded from (seed, method), the clients' diagnostics as the config asks. A setting
    the model cannot take is a one-line ConfigError, before any round."""
    cfg, plan = exp.cfg, exp.plans[method]
    return METHODS[method].build(
        cfg, plan, model, _seed32(cfg.seed, method_key(method), GROUP_NOISE_STREAM),
        bool(client_diagnostics(cfg, plan)))     # clients' un-noised statistics: threat_model


def make_runner(exp: Experiment, method: str, backend: Optional[str] = None,
                spec: Optional[RoundSpec] = None, **runner_options):
    """The backend runner of ``method`` built whole (:func:`round_spec`, or ``spec``),
    before any round: (runner, spec, initial weights). ``runner_options``: the backend's own
    (the fast backend's ``mode``)."""
    cfg = exp.cfg
    model_fn = build_model_fn(exp, method)
    w0 = initial_weights(exp, model_fn)
    spec = spec or round_spec(exp, method, model_fn())
    x = exp.data.x_train
    # a phase of epochs keeps a short last batch
    batch_dim = None if any(ph.epochs for ph in spec.program.phases) else cfg.batch_size
    shapes = (tf.TensorSpec([batch_dim] + list(x.shape[1:]), input_dtype(exp.data)),
              tf.TensorSpec([batch_dim] + list(exp.data.y_train.shape[1:]), tf.int32))
    runner = BACKENDS[backend or cfg.backend](cfg, spec.plan, model_fn, w0, spec.aggregation,
                                              shapes, spec.program, **runner_options)
    return runner, spec, w0


def check_methods(exp: Experiment) -> None:
    """Every method can be built whole on the experiment's model and takes its data
    (one-line ConfigError otherwise): run before anything is written."""
    x = exp.data.x_train[:1].astype(input_dtype(exp.data).as_numpy_dtype)
    for method in exp.cfg.methods:
        try:
            model = build_model_fn(exp, method)()
        except ValueError as e:
            raise ConfigError(f"model={exp.cfg.model!r}: {e}") from e
        try:
            model(x)                          # the data's inputs fit the model
        except (ValueError, tf.errors.InvalidArgumentError) as e:
            raise ConfigError(f"model={exp.cfg.model!r}: does not take {exp.cfg.dataset}'s "
                              f"inputs of shape {tuple(x.shape[1:])} "
                              f"({str(e).strip().splitlines()[0][:120]})") from e
        round_spec(exp, method, model)
        for key, value, why in METHODS[method].check_experiment(exp):
            raise ConfigError(f"{key}={value!r}: {why}")


def run_method(exp: Experiment, method: str, progress: bool = True,
               on_round: Optional[Callable] = None, backend: Optional[str] = None,
               checkpoint_dir: Optional[Path] = None, started: Optional[float] = None):
    """Train ``method`` for ``cfg.rounds`` rounds. Returns (rows, :class:`RunSummary`, ledger).

    Random streams: cohort sampling from (seed, method), client noise from (seed, method,
    round, client) (``noise_draw="group"``: group noise from (seed, method, stream) and the
    round), client data order from (seed, round, client[, phase]), initial model (and every
    client's initial personal part) from seed.

    Checkpoints: with ``checkpoint_dir``, every ``cfg.checkpoint_every`` rounds the backend
    state (model, optimizer, aggregator), the personal store, the sampler's generator state,
    the ledger and the rows so far are saved there; a later call with the same experiment
    resumes from it and ends with exactly the metrics of an uninterrupted run (every other
    random stream is a function of (seed, round, client), not of history).

    Time: each row's ``seconds`` is the round (sampling, data, training, aggregation) and
    ``eval_seconds`` its evaluation; the summary adds ``seconds_setup``, from ``started``
    (a ``time.perf_counter()`` reading; default: this call) to the first round of this
    process (the data when ``started`` is taken before loading it, the model and backend
    built, a checkpoint read; the first round's tracing counts in its ``seconds``), and
    ``seconds_wall``, the three together."""
    started = time.perf_counter() if started is None else started
    own_peak = reset_peak_rss()          # this run's peak memory, not an earlier run's
    cfg, plan = exp.cfg, exp.plans[method]
    for key, value, why in METHODS[method].check_experiment(exp):
        raise ConfigError(f"{key}={value!r}: {why}")
    runner, spec, w0 = make_runner(exp, method, backend)
    split = spec.program.split
    model_fn = build_model_fn(exp, method)
    evaluator = model_fn()           # after the backend: TFF's tracing invalidates earlier ones
    store = PersonalStore(w0, split, cfg.num_clients)
    personal_eval = personal_evaluation(exp, spec, evaluator)
    client_eval = client_test_evaluation(exp, spec, evaluator)
    state = RunState(runner, store, np.random.default_rng([cfg.seed, method_key(method)]),
                     exp.new_ledger(plan))
    fingerprint = run_fingerprint(exp.cfg, method)
    resumed = load_checkpoint(checkpoint_dir, fingerprint)
    audit = canary_audit(exp, method, w0)
    if audit is not None and resumed is not None:     # its scores are not checkpointed
        print(f"{method}: a run with canaries starts over (their scores are not in the "
              "checkpoint)", file=sys.stderr)
        resumed = None
    if resumed is not None:
        try:
            state.restore(resumed)      # saved arrays that do not fit: refused before any
        except ValueError as e:         # is taken, so the fresh state is as it was
            print(f"{method}: the checkpoint in {checkpoint_dir} does not fit this run ({e}); "
                  "starting over", file=sys.stderr)
            resumed = None
    start = state.rounds_done
    state.segments = SegmentLog(cfg.device, state.rows,
                                None if resumed is None else resumed["segments"])
    bar = tqdm(range(start, cfg.rounds), desc=f"{method}", unit="round",
               disable=not progress, leave=False, initial=start, total=cfg.rounds)
    setup = time.perf_counter() - started
    with StopRequests() as stop:
        ctx = RunContext(exp, method, fingerprint, checkpoint_dir, stop, bar, on_round, audit,
                         evaluator, personal_eval, client_eval)
        _rounds(ctx, state)
    bar.close()
    rows, ledger, segments = state.rows, state.ledger, state.segments
    summary = _summary(ctx, state, start, spec, setup)
    # resident memory at its highest in this process since the run began (a resumed run:
    # its last process), the data already loaded included; "process" where the peak could
    # not be reset and earlier work in the process may have set it
    summary.peak_memory_bytes = peak_rss_bytes()
    summary.peak_memory_scope = "run" if own_peak else "process"
    summary.segments = segments.upto(rows)       # which process and machine trained what
    if audit is not None:
        t0 = time.perf_counter()
        groups = summary.groups
        summary.audit = audit.report(
            runner.weights, ledger.delta,
            groups[str(audit.group)]["realised_epsilon"] if groups else "not private")
        summary.audit["seconds"] = round(audit.seconds + time.perf_counter() - t0, 3)
    return rows, summary, ledger


def canary_audit(exp: Experiment, method: str, w0):
    """The run's :class:`~tff_idp.audit.canaries.CanaryAudit` (``audit_canaries`` > 0):
    canaries in ``audit_group`` with its rate and clip (the config's clip for a method that
    clips nothing), directions over every model coordinate, seeded from (seed, method);
    None without one."""
    cfg, plan = exp.cfg, exp.plans[method]
    if not cfg.audit_canaries:
        return None
    from ..audit.canaries import CanaryAudit
    g = cfg.audit_group
    clip = plan.clips[plan.aggregation_groups[g]]
    audit = CanaryAudit(cfg.audit_canaries, g, clip if np.isfinite(clip) else cfg.clip,
                        plan.rates[g], [np.shape(w) for w in w0],
                        _seed32(cfg.seed, method_key(method), CANARY_STREAM))
    audit.begin(w0)
    return audit


def personal_evaluation(exp: Experiment, spec: RoundSpec, evaluator):
    """Each client's model on its own test (and validation) examples, when the method keeps
    a personal part or fine-tunes a read-out copy per client; None when the global model is
    what is evaluated."""
    cfg, d, program, tune = exp.cfg, exp.data, spec.program, spec.evaluation
    if program.split.trivial and tune is None:
        return None
    finetune = None
    if tune is not None:
        from ..algorithms.client_work import LocalTraining
        from .cohort_model import CohortModel
        cohort = CohortModel(evaluator)
        trainable = None
        if tune["tune"] == "personal":
            masks = program.split.trainable("personal")
            trainable = [masks[i] for i in cohort.readout_tensors]
        finetune = ReadoutFineTune(
            cohort, LocalTraining.of_config(cfg).trainer(),
            ReadoutFineTune.Schedule(tune["epochs"], tune["lr"], cfg.lr_decay, cfg.batch_size,
                                     cfg.seed),
            ClientExamples(d.x_train, d.y_train, exp.client_indices), trainable,
            cfg.fast_chunk_size)
    reparam = program.reparam if program.reparam is not None and \
        program.reparam.in_evaluation else None
    validation = None if exp.client_validation is None else ClientExamples(
        d.x_train, d.y_train, exp.client_validation)
    return PersonalEvaluation(evaluator, program.split, _client_tests(exp), validation,
                              finetune, reparam, lanes=_eval_lanes(cfg))


def _eval_lanes(cfg) -> int:
    """Batches an evaluation computes at once: the run's ``fast_lanes`` where every
    operation runs on one thread (lanes off a GPU), so that they use the cores; else 1."""
    return cfg.fast_lanes if in_lanes_on_cpu(cfg) else 1


def client_test_evaluation(exp: Experiment, spec: RoundSpec, evaluator):
    """The global model on each client's own test examples (those of the classes it trains
    on; mean over clients), beside its accuracy on the whole test set, for a method without a
    personal part that asks for it (``Method.client_tests``: LDP-FedAvg, paper 002's
    baseline, like for like with MS-PAFL's personalised accuracy); None otherwise."""
    if not spec.client_tests or not spec.program.split.trivial:
        return None
    return PersonalEvaluation(evaluator, spec.program.split, _client_tests(exp),
                              lanes=_eval_lanes(exp.cfg))


def _client_tests(exp: Experiment) -> ClientExamples:
    """The test set, each client's part of it the examples of the classes it trains on."""
    d = exp.data
    return ClientExamples(d.x_test, d.y_test,
                          client_test_sets(d.y_train, exp.client_indices, d.y_test))


@dataclasses.dataclass
class RunContext:
    """What stays the same through a run's rounds: the experiment and method, where and
    under which fingerprint it checkpoints, the stop request, the progress bar, the
    per-round callback, the canary audit and the evaluators."""
    exp: Experiment
    method: str
    fingerprint: str
    checkpoint_dir: Optional[Path]
    stop: StopRequests
    bar: object
    on_round: Optional[Callable]
    audit: object
    evaluator: object
    personal_eval: object
    client_eval: object


def _checkpoint(ctx: RunContext, state: RunState, rng_state=None) -> None:
    """Everything a resumed run needs after ``state.rounds_done`` rounds, into its folder."""
    save_checkpoint(Path(ctx.checkpoint_dir), ctx.fingerprint, state.snapshot(rng_state))


def _stop_within_round(ctx: RunContext, state: RunState, rnd: int, rng_before):
    """A stop request reached round ``rnd`` between two chunks of clients: nothing of the
    round was applied (the backend updates weights and state at its end), so the run stops
    at the checkpoint of the rounds before, with the random state from before the round's
    cohort was drawn: resuming redoes the round exactly."""
    ctx.bar.close()
    if ctx.checkpoint_dir is not None and rnd > 0:
        _checkpoint(ctx, state, rng_before)
        where = (f"resume from the checkpoint of round {rnd} by running the same command "
                 f"(round {rnd + 1} is done again)")
    else:
        where = ("no checkpoint (no results folder)" if ctx.checkpoint_dir is None else
                 "nothing to resume from (run the same command to start again)")
    print(f"{ctx.method}: stopped during round {rnd + 1} of {ctx.exp.cfg.rounds}; {where}",
          file=sys.stderr)
    raise SystemExit(ctx.stop.exit_status)


def curve_test_set(x, y, count, seed):
    """The test examples of the rounds before the last (``curve_test_examples``): a seeded
    random subset of ``count`` (all when ``count`` is None or not smaller)."""
    if count is None or count >= len(y):
        return x, y
    idx = np.sort(np.random.default_rng([seed, 2]).choice(len(y), count, replace=False))
    return x[idx], y[idx]


def _rounds(ctx: RunContext, state: RunState) -> None:
    """The rounds of :func:`run_method` (``state`` after each is :func:`round_step`'s),
    with the hooks around them: the heartbeat, checkpoints, the per-round callback, and a
    stop request (SIGINT, SIGTERM) ending them after the current round with a checkpoint
    and one line."""
    cfg = ctx.exp.cfg
    curve = curve_test_set(ctx.exp.data.x_test, ctx.exp.data.y_test, cfg.curve_test_examples,
                           cfg.seed)
    began, done_here = time.perf_counter(), 0    # this process's rounds, for the mean pace
    for rnd in ctx.bar:
        if ctx.stop.signum is not None:      # asked to stop during the set-up: no round run
            ctx.bar.close()
            print(f"{ctx.method}: stopped before round {rnd + 1} of {cfg.rounds}; run the "
                  "same command to go on", file=sys.stderr)
            raise SystemExit(ctx.stop.exit_status)
        t0 = time.perf_counter()
        row = round_step(ctx, state, rnd)
        check_finite_weights(ctx, state.runner.weights, rnd)
        _evaluate(ctx, state, rnd, row, curve)
        state.rows.append(row)
        done_here += 1
        if ctx.checkpoint_dir is not None:   # for `slurm status`: this run is alive
            now = time.perf_counter()
            write_heartbeat(Path(ctx.checkpoint_dir), rnd + 1, now - t0,
                            mean_round_seconds=(now - began) / done_here)
        every = cfg.checkpoint_every
        due = every and (rnd + 1) % every == 0
        if ctx.checkpoint_dir is not None and rnd + 1 < cfg.rounds and \
                (due or ctx.stop.signum):
            _checkpoint(ctx, state)
        if ctx.on_round is not None:
            ctx.on_round(row)
        if ctx.stop.signum is not None and rnd + 1 < cfg.rounds:
            ctx.bar.close()
            where = ("resume from the checkpoint of round "
                     f"{rnd + 1} by running the same command"
                     if ctx.checkpoint_dir is not None else "no checkpoint (no results folder)")
            print(f"{ctx.method}: stopped at round {rnd + 1} of {cfg.rounds}; {where}",
                  file=sys.stderr)
            raise SystemExit(ctx.stop.exit_status)


def check_finite_weights(ctx: RunContext, weights, rnd: int) -> None:
    """Raises :class:`RunDiverged` when a weight of the global model is nan or inf after
    round ``rnd``: every later round would train on it and report chance as a result. The
    round is not evaluated, recorded or checkpointed."""
    if all(np.isfinite(np.asarray(w)).all() for w in weights):
        return
    cfg = ctx.exp.cfg
    raise RunDiverged(
        f"{ctx.method}: round {rnd + 1} of {cfg.rounds}: the model's weights are no longer "
        f"finite (local_lr={cfg.local_lr:g}, server_lr={cfg.server_lr:g}, "
        f"clip={cfg.clip:g}); a smaller step would keep them in float32's range")


def round_step(ctx: RunContext, state: RunState, rnd: int) -> dict:
    """One round (module docstring) on ``state``: cohort, client work, aggregation, server
    update, personal parts, ledger, audit. Returns the round's metrics row (without its
    evaluation)."""
    exp, method = ctx.exp, ctx.method
    cfg, plan = exp.cfg, exp.plans[method]
    runner, audit = state.runner, ctx.audit
    m_agg = plan.num_aggregation_groups
    program = runner.program
    t0 = time.perf_counter()
    rng_before = state.rng.bit_generator.state     # a round stopped half-way: redone
    cohort = sample_cohort(state.rng, exp.group_members, plan.rates, cfg.sampling)
    noise_seed = _seed32(cfg.seed, method_key(method), rnd)   # [noise_seed, client]
    batches, infos, ids = [[] for _ in program.phases], [], []
    for g, clients in enumerate(cohort):
        onehot = np.zeros(m_agg, np.float32)
        onehot[plan.aggregation_groups[g]] = 1.0
        public = plan.public_group is not None and \
            plan.aggregation_groups[g] == plan.public_group
        for j, c in enumerate(clients):
            once = None                   # the client's examples, shared by its phases
            for p, phase in enumerate(program.phases):
                examples = phase_examples(exp, c, rnd, phase, p, once)
                once = examples[:2] if len(examples) == 3 else once
                batches[p].append(examples)
            infos.append(collections.OrderedDict(
                group=onehot, seed=np.array([noise_seed, c], np.int32),
                slot=np.int32(j if public else -1)))
            ids.append(int(c))
    measurements = {}
    canaries = None
    if audit is not None:            # beside the cohort: not in the ledger or the data
        chosen = audit.sample(rnd)
        onehot = np.zeros(m_agg, np.float32)
        onehot[plan.aggregation_groups[audit.group]] = 1.0
        canaries = (audit.updates(chosen), np.repeat(onehot[None], len(chosen), 0),
                    np.array([[noise_seed, cfg.num_clients + j] for j in chosen],
                             np.int32).reshape(-1, 2))
    if ids or runner.noise_in_empty_rounds:     # module docstring: empty rounds
        extra = {} if canaries is None else {"canaries": canaries}
        try:
            measurements, kept = runner.step(batches, infos, rnd, state.store.gather(ids),
                                             **extra)
        except RoundInterrupted:
            _stop_within_round(ctx, state, rnd, rng_before)
        state.store.scatter(ids, kept)
        if not ids:                  # nothing trained: no loss or clipping to show
            measurements = {k: v for k, v in measurements.items() if k == "adaptive_clip"}
    state.ledger.record_round(plan.round_mechanisms(), ids,
                              plan.server_multipliers([len(c) for c in cohort]))
    if audit is not None:
        t_audit = time.perf_counter()
        audit.observe(runner.weights)
        audit.seconds += time.perf_counter() - t_audit
    return {"round": rnd + 1, "cohort": len(ids),
            "cohort_per_group": "/".join(str(len(c)) for c in cohort),
            **{k: measurements.get(k, np.nan) for k in
               list(runner.diagnostics.values()) + ["adaptive_clip"]},
            "seconds": round(time.perf_counter() - t0, 4)}


def _evaluate(ctx: RunContext, state: RunState, rnd: int, row: dict, curve) -> None:
    """The round's evaluation into ``row`` (every ``eval_every`` rounds and the last): the
    global model on the test set (a seeded subset before the last round,
    ``curve_test_examples``), the pooled validation examples, each client's classes; or,
    with a personal part, each client's own model."""
    exp, cfg, runner = ctx.exp, ctx.exp.cfg, state.runner
    if (rnd + 1) % cfg.eval_every != 0 and rnd + 1 != cfg.rounds:
        return
    t_eval = time.perf_counter()
    if ctx.personal_eval is None:
        evaluator = ctx.evaluator
        evaluator.set_weights(runner.weights)
        last = rnd + 1 == cfg.rounds
        x, y = (exp.data.x_test, exp.data.y_test) if last else curve
        lanes = _eval_lanes(cfg)
        row["test_loss"], row["test_accuracy"] = evaluate(evaluator, x, y, lanes=lanes)
        if exp.client_validation is not None:     # the pooled validation examples
            val = np.concatenate(exp.client_validation)
            row["validation_loss"], row["validation_accuracy"] = evaluate(
                evaluator, exp.data.x_train[val], exp.data.y_train[val], lanes=lanes)
        ctx.bar.set_postfix(acc=f"{row['test_accuracy']:.3f}")
        if ctx.client_eval is not None:     # the same model on each client's classes
            row.update({k.replace("personal_", "client_", 1): v for k, v in
                        ctx.client_eval(runner.weights, state.store, rnd).items()})
    else:                        # no global model: each client's own
        row.update(ctx.personal_eval(runner.weights, state.store, rnd))
        ctx.bar.set_postfix(acc=f"{row['personal_test_accuracy']:.3f}")
    row["eval_seconds"] = round(time.perf_counter() - t_eval, 4)


def _summary(ctx: RunContext, state: RunState, start: int, spec: RoundSpec,
             setup: float) -> RunSummary:
    """summary.json of the run of ``spec`` that ``state`` ends (``start``: the rounds it
    resumed after; ``setup``: its start-up seconds)."""
    exp, method, personal_eval = ctx.exp, ctx.method, ctx.personal_eval
    runner, rows, store, ledger, segments = (state.runner, state.rows, state.store,
                                             state.ledger, state.segments)
    cfg, plan, split = exp.cfg, spec.plan, spec.program.split
    secs = [r["seconds"] for r in rows]
    headline = "test_accuracy" if personal_eval is None else "personal_test_accuracy"
    evals = [r.get("eval_seconds") for r in rows if r.get(headline) not in (None, "")]
    # rows restored from a checkpoint written before evaluations were timed have none:
    # no evaluation or wall time then, rather than a part of it
    timed = all(e not in (None, "") for e in evals)
    eval_total = float(sum(float(e) for e in evals)) if timed else None
    summary = RunSummary(
        method=method,
        backend=runner.name,
        backend_mode=runner.mode,
        low_rank_kernels=[int(i) for i in getattr(runner, "factored", ())] or None,
        final_test_accuracy=rows[-1][headline],
        final_test_loss=rows[-1][headline.replace("accuracy", "loss")],
        headline_metric=headline,
        final_client_test_accuracy=rows[-1].get("client_test_accuracy"),
        final_client_test_accuracy_std=rows[-1].get("client_test_accuracy_std"),
        test_examples=int(len(exp.data.y_test)),
        curve_test_examples=int(min(cfg.curve_test_examples, len(exp.data.y_test)))
        if cfg.curve_test_examples and personal_eval is None else None,
        rounds=cfg.rounds,
        resumed_from_round=start or None,
        seconds_total=float(np.sum(secs)),
        seconds_per_round_after_first=float(np.mean(secs[1:])) if len(secs) > 1 else secs[0],
        seconds_eval=eval_total,
        seconds_setup=round(setup, 4),
        # a resumed run: every round's training and evaluation, the last process's set-up
        seconds_wall=float(np.sum(secs) + eval_total + setup) if timed else None,
        plan=plan_summary(plan, exp.setting),
        machine=segments.machine,
        data_note=exp.data.note or None,
        extras=spec.extras,
        personal=None if split.trivial else {
            "split": split.spec, "personal_parameters_per_client": split.personal_count,
            "shared_parameters": split.shared_count, "store_bytes": store.nbytes,
            "evaluation": "each client's model (shared part + its personal part) on the test "
                          "examples of its training classes; mean over clients"},
        privacy=METHODS[method].privacy_summary(plan, cfg, ledger, exp),
    )
    if personal_eval is not None:
        summary.final_test_accuracy_std = rows[-1]["personal_test_accuracy_std"]
    tune = spec.evaluation
    if tune is not None:
        summary.evaluation = (
            f"each client fine-tunes a throw-away copy of the read-out ({tune['tune']} "
            f"tensors, {tune['epochs']} epochs at lr {tune['lr']:g}) on its training examples "
            "and is tested on the test examples of its training classes; mean over clients")
    return dataclasses.replace(summary, **best_validation(rows, headline))


def best_validation(rows, headline: str) -> dict:
    """Paper 001's reported number (CENTAUR's protocol): the test accuracy at the evaluated
    round of best mean validation accuracy (the first such round). Empty without a
    validation split."""
    scored = [r for r in rows if np.isfinite(r.get("validation_accuracy", np.nan))]
    if not scored:
        return {}
    best = max(scored, key=lambda r: r["validation_accuracy"])      # first of the ties
    return {"best_validation_round": best["round"],
            "best_validation_accuracy": best["validation_accuracy"],
            "reported_test_accuracy": best[headline],
            "reported": "test accuracy at the round of best mean validation accuracy"}
