"""The round loop: one method of an :class:`Experiment`, round by round, on a backend.

Per round: sample the cohort per group (``tff_idp.sampling``), draw each sampled client's
examples in training order (``client_examples``: permutations seeded by (seed, round,
client)), let the backend (``backends.TFFBackend`` or ``backends.FastBackend``) run the round,
evaluate the new global model on the held-out test set, record the round in the ledger.
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
import pickle
import time
import zlib
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import tensorflow as tf
from tqdm.auto import tqdm

from .. import models
from ..aggregators import GroupGaussianFactory, PFAFactory
from ..aggregators.group_gaussian import AdaptiveClipping
from ..privacy import idp
from ..privacy.threat_model import guarantee
from ..runtime import import_tff
from ..sampling import sample_cohort
from .backends import BACKENDS
from .experiment import Experiment, plan_summary


GROUP_NOISE_STREAM = 1 << 30      # the third part of the group-noise base seed (rounds < it)


def _seed32(*parts) -> int:
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0] % (2**31 - 1))


def build_model_fn(exp: Experiment) -> Callable[[], tf.keras.Model]:
    d = exp.data
    shape = tuple(d.x_train.shape[1:])
    input_dim = int(np.prod(shape))
    return lambda: models.build(exp.cfg.model, input_dim=input_dim, input_shape=shape,
                                num_classes=d.num_classes, vocab_size=d.num_classes,
                                seq_len=shape[0])


def input_dtype(data) -> tf.DType:
    """int32 for token inputs (character windows), float32 for features and images."""
    return tf.int32 if np.issubdtype(data.x_train.dtype, np.integer) else tf.float32


def initial_weights(exp: Experiment, model_fn):
    tf.keras.utils.set_random_seed(exp.cfg.seed)
    return model_fn().get_weights()


def make_factory(plan, adaptive_clipping: str = "ours", noise_draw: str = "client",
                 noise_seed: int = 0):
    """The aggregation factory of a plan. ``noise_draw``/``noise_seed``: who draws the
    Gaussian noise (``GroupGaussianFactory``). Adaptive clipping (IDP-FedAvg, paper 004):
    ``"ours"``, GroupGaussianFactory with Andrew et al.'s adaptive clip and seeded noise
    (deterministic, resumable, runs on both backends), or ``"tff"``, TFF's
    ``DifferentiallyPrivateFactory.gaussian_adaptive`` itself (initial clip 0.1, target
    quantile 0.5, learning rate 0.2), whose noise is unseeded."""
    if plan.adaptive_clip:
        cohort = float(plan.expected_cohorts[0])
        z = float(plan.noise_multipliers[0])
        count_std = idp.clipped_count_stddev(z, cohort)
        if adaptive_clipping == "tff":
            tff = import_tff()
            return tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive(
                noise_multiplier=z, clients_per_round=cohort,
                initial_l2_norm_clip=float(plan.clips[0]),
                target_unclipped_quantile=idp.ADAPTIVE_TARGET_QUANTILE,
                learning_rate=idp.ADAPTIVE_LEARNING_RATE, clipped_count_stddev=count_std)
        z_value = idp.value_noise_multiplier(z, count_std)
        return GroupGaussianFactory(
            plan.clips, [z_value * plan.clips[0]], plan.expected_cohorts, plan.weights,
            plan.keep_fractions,
            adaptive=AdaptiveClipping(z_value, count_std, idp.ADAPTIVE_TARGET_QUANTILE,
                                      idp.ADAPTIVE_LEARNING_RATE),
            noise_draw=noise_draw, noise_seed=noise_seed)
    if plan.public_group is not None:
        return PFAFactory(plan.clips, plan.noise_stddevs, plan.expected_cohorts, plan.weights,
                          public_group=plan.public_group, projected_group=plan.projected_group,
                          public_noise=plan.public_noise)
    return GroupGaussianFactory(plan.clips, plan.noise_stddevs, plan.expected_cohorts,
                                plan.weights, plan.keep_fractions, noise_draw=noise_draw,
                                noise_seed=noise_seed)


# how client data is ordered (client_examples); part of every run fingerprint, so results
# made with another order are not taken as complete. 1: tf.data shuffles (sessions 1-2);
# 2: numpy permutations shared by both backends
DATA_ORDER_VERSION = 2


def client_examples(exp: Experiment, client: int, rnd: int):
    """Client ``client``'s training examples of round ``rnd``, in the order it uses them:
    permutations of its examples drawn from (seed, round, client), one after another, as
    many as ``local_epochs`` asks (batched by the backend, the last batch may be short) or
    the first ``local_steps * batch_size`` of enough of them (full batches only). Returned
    as arrays (x, y); both backends batch these same arrays."""
    cfg = exp.cfg
    idx = exp.client_indices[client]
    n = len(idx)
    rng = np.random.default_rng([cfg.seed, rnd, client, DATA_ORDER_VERSION])
    need = None if cfg.local_epochs else cfg.local_steps * cfg.batch_size
    passes = cfg.local_epochs or -(-need // n)
    order = idx[np.concatenate([rng.permutation(n) for _ in range(passes)])[:need]]
    x = exp.data.x_train[order].astype(input_dtype(exp.data).as_numpy_dtype)
    return x, exp.data.y_train[order]


def evaluate(model, x, y, batch: int = 1000):
    """(mean cross-entropy, accuracy) of ``model`` on (x, y), in batches, through one traced
    forward pass per model (graph mode: a paper-scale run evaluates 10,000 images every
    round, which eager Keras calls made a third of the run)."""
    cast = np.int32 if np.issubdtype(x.dtype, np.integer) else np.float32
    forward = getattr(model, "_tff_idp_forward", None)
    if forward is None:
        forward = tf.function(lambda xb: model(xb, training=False), reduce_retracing=True)
        model._tff_idp_forward = forward
    logits = np.concatenate([forward(x[i:i + batch].astype(cast)).numpy()
                             for i in range(0, len(y), batch)])
    loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
        y, logits, from_logits=True))
    return float(loss), float(np.mean(np.argmax(logits, 1) == y))


def method_key(method: str) -> int:
    """A stable number per method name: its random streams do not depend on where it sits
    in the config's method list."""
    return zlib.crc32(method.encode())


CHECKPOINT = "checkpoint.pkl"


def plan_version(cfg, method: str) -> int:
    """Bumped where a fix changed the numbers a method's plan is made of, so that results and
    checkpoints made with the old plan count as stale: 1 = SAMPLE's rates on the full RDP
    orders (idp_sample, idp_fedavg) and fixed-size cohorts accounted under replace-one with
    sensitivity 2C; 0 = unchanged since the first release."""
    if cfg.sampling == "fixed" and method != "p_fedavg":
        return 1
    return 1 if method in ("idp_sample", "idp_fedavg") else 0


def run_fingerprint(cfg, method: str) -> str:
    """What a checkpoint (or a finished results folder, for the harness) must match: every
    config key that changes the computation (not where results go, how often to checkpoint,
    or the device and chunk size)."""
    keys = dataclasses.asdict(cfg)
    for k in ("output_dir", "checkpoint_every", "device", "fast_chunk_size", "reference", "name",
              "methods"):
        keys.pop(k, None)
    # keys at their default value are left out, so that a key added to the config later
    # (with a default that keeps the old behaviour) does not orphan earlier results
    defaults = dataclasses.asdict(type(cfg)())
    keys = {k: v for k, v in keys.items() if v != defaults.get(k)}
    version = plan_version(cfg, method)
    if version:
        keys["plan_version"] = version
    return hashlib.sha256(json.dumps([method, keys, DATA_ORDER_VERSION], sort_keys=True,
                                     default=str).encode()).hexdigest()[:16]


def save_checkpoint(folder: Path, payload: dict) -> None:
    """Pickle written to a temporary name and moved into place (a kill mid-write leaves the
    previous checkpoint intact)."""
    tmp = folder / (CHECKPOINT + ".tmp")
    with open(tmp, "wb") as f:
        pickle.dump(payload, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, folder / CHECKPOINT)


def load_checkpoint(folder: Optional[Path], fingerprint: str) -> Optional[dict]:
    if folder is None or not (Path(folder) / CHECKPOINT).is_file():
        return None
    with open(Path(folder) / CHECKPOINT, "rb") as f:
        payload = pickle.load(f)
    return payload if payload.get("fingerprint") == fingerprint else None


def run_method(exp: Experiment, method: str, progress: bool = True,
               on_round: Optional[Callable] = None, backend: Optional[str] = None,
               checkpoint_dir: Optional[Path] = None):
    """Train ``method`` for ``cfg.rounds`` rounds. Returns (rows, summary, ledger).

    Random streams: cohort sampling from (seed, method), client noise from (seed, method,
    round, client) (``noise_draw="group"``: group noise from (seed, method, stream) and the
    round), client data order from (seed, round, client), initial model from seed.

    Checkpoints: with ``checkpoint_dir``, every ``cfg.checkpoint_every`` rounds the backend
    state (model, optimizer, aggregator), the sampler's generator state, the ledger and the
    rows so far are saved there; a later call with the same experiment resumes from it and
    ends with exactly the metrics of an uninterrupted run (every other random stream is a
    function of (seed, round, client), not of history)."""
    cfg, plan = exp.cfg, exp.plans[method]
    model_fn = build_model_fn(exp)
    w0 = initial_weights(exp, model_fn)
    m_agg = plan.num_aggregation_groups
    factory = make_factory(plan, cfg.adaptive_clipping, cfg.noise_draw,
                           _seed32(cfg.seed, method_key(method), GROUP_NOISE_STREAM))
    x = exp.data.x_train
    batch_dim = None if cfg.local_epochs else cfg.batch_size   # epochs keep a short batch
    spec = (tf.TensorSpec([batch_dim] + list(x.shape[1:]), input_dtype(exp.data)),
            tf.TensorSpec([batch_dim], tf.int32))
    runner = BACKENDS[backend or cfg.backend](cfg, plan, model_fn, w0, factory, spec)
    evaluator = model_fn()
    test_x, test_y = exp.data.x_test, exp.data.y_test
    rng = np.random.default_rng([cfg.seed, method_key(method)])
    members = exp.group_members
    ledger = exp.new_ledger(plan)
    rows, start = [], 0
    fingerprint = run_fingerprint(exp.cfg, method)
    resumed = load_checkpoint(checkpoint_dir, fingerprint)
    if resumed is not None:
        runner.restore(resumed["backend"])
        rng.bit_generator.state = resumed["rng"]
        ledger, rows, start = resumed["ledger"], resumed["rows"], resumed["rounds_done"]
    bar = tqdm(range(start, cfg.rounds), desc=f"{method}", unit="round",
               disable=not progress, leave=False, initial=start, total=cfg.rounds)
    for rnd in bar:
        t0 = time.perf_counter()
        cohort = sample_cohort(rng, members, plan.rates, cfg.sampling)
        noise_seed = _seed32(cfg.seed, method_key(method), rnd)   # [noise_seed, client]
        examples, infos, ids = [], [], []
        for g, clients in enumerate(cohort):
            onehot = np.zeros(m_agg, np.float32)
            onehot[plan.aggregation_groups[g]] = 1.0
            public = plan.public_group is not None and plan.aggregation_groups[g] == plan.public_group
            for j, c in enumerate(clients):
                examples.append(client_examples(exp, c, rnd))
                infos.append(collections.OrderedDict(
                    group=onehot, seed=np.array([noise_seed, c], np.int32),
                    slot=np.int32(j if public else -1)))
                ids.append(int(c))
        measurements = runner.step(examples, infos, rnd) if examples else {}
        ledger.record_round(plan.round_mechanisms(), ids)
        seconds = time.perf_counter() - t0
        row = {"round": rnd + 1, "cohort": len(ids),
               "cohort_per_group": "/".join(str(len(c)) for c in cohort),
               **{k: measurements.get(k, np.nan) for k in
                  ("train_loss", "clipped_fraction", "mean_update_norm", "adaptive_clip")},
               "seconds": round(seconds, 4)}
        if (rnd + 1) % cfg.eval_every == 0 or rnd + 1 == cfg.rounds:
            evaluator.set_weights(runner.weights)
            row["test_loss"], row["test_accuracy"] = evaluate(evaluator, test_x, test_y)
            bar.set_postfix(acc=f"{row['test_accuracy']:.3f}")
        rows.append(row)
        every = cfg.checkpoint_every
        if checkpoint_dir is not None and every and (rnd + 1) % every == 0 \
                and rnd + 1 < cfg.rounds:
            save_checkpoint(Path(checkpoint_dir), {
                "fingerprint": fingerprint, "rounds_done": rnd + 1,
                "backend": runner.snapshot(), "rng": rng.bit_generator.state,
                "ledger": ledger, "rows": rows})
        if on_round is not None:
            on_round(row)
    bar.close()
    secs = [r["seconds"] for r in rows]
    summary = {
        "method": method,
        "backend": runner.name,
        "backend_mode": runner.mode,
        "final_test_accuracy": rows[-1]["test_accuracy"],
        "final_test_loss": rows[-1]["test_loss"],
        "rounds": cfg.rounds,
        "resumed_from_round": start or None,
        "seconds_total": float(np.sum(secs)),
        "seconds_per_round_after_first": float(np.mean(secs[1:])) if len(secs) > 1 else secs[0],
        "plan": plan_summary(plan, exp.setting),
        **({"data_note": exp.data.note} if exp.data.note else {}),
        **({"clipped_count_stddev": idp.clipped_count_stddev(
            float(plan.noise_multipliers[0]), float(plan.expected_cohorts[0])),
            "adaptive_clipping": cfg.adaptive_clipping} if plan.adaptive_clip else {}),
        "privacy": ({**ledger.summary(), "guarantee": guarantee(
            cfg.sampling, cfg.noise_draw, plan.accounting_gap, plan.observed_groups)}
            if plan.private else {"private": False}),
    }
    return rows, summary, ledger
