"""Canary clients for the one-run audit (Andrew et al. 2024; Steinke et al. 2023): what they
send, when they take part, and their scores. No TensorFlow: the round loop hands their
updates to the backend, which clips, noises and sums them with the same code as every
client's (``GroupGaussianQuery.client_math``), so the audit tests that code.

- m canaries in one privacy group g (``audit_group``); canary j's update is a fixed random
  unit direction u_j (seeded) times the group's clip C, on every model coordinate;
- each canary is inserted with probability 1/2 (seeded, recorded); an inserted canary takes
  part in a round with the group's rate q_g (Poisson, its own seeded stream), a canary never
  inserted never does;
- scores, for two observers: ``final``, the cosine of the final model change w_T - w_0 with
  u_j (who sees only the released model), and ``rounds``, the largest over rounds of the
  cosine of the round's change w_t - w_{t-1} with u_j (who sees every round's model, as a
  model viewer of FL does);
- canaries never enter the ledger, the evaluation or the accuracy: the round loop passes them
  beside the cohort, and the run's fingerprint includes ``audit_canaries``.

Directions are random sign vectors, u_j = s_j / sqrt(d) with s_j uniform on {-1, +1}^d: a
unit vector whose cosine with any fixed vector has mean 0 and variance exactly 1/d, as a
direction uniform on the sphere (Andrew et al.'s choice) has, and nearly Gaussian for a model
change not concentrated on a few coordinates. Signs are stored as bits (m d / 8 bytes: 207 MB
for 1,000 canaries on FMNIST's 1.66M-parameter CNN, against 6.6 GB as float32), so scoring a
round is one pass over the bits (about 2 s there) instead of regenerating Gaussian directions
(about 20 s).
"""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

from . import bounds

BLOCK = 64


class CanaryAudit:
    def __init__(self, count: int, group: int, clip: float, rate: float, shapes, seed: int):
        self.count, self.group, self.clip, self.rate = int(count), int(group), float(clip), \
            float(rate)
        self.shapes = [tuple(s) for s in shapes]
        self.size = int(sum(np.prod(s) for s in self.shapes))
        self.seed = int(seed)
        self.inserted = np.random.default_rng([self.seed, 1]).random(self.count) < 0.5
        self.signs = np.random.default_rng([self.seed, 2]).integers(
            0, 256, (self.count, -(-self.size // 8)), dtype=np.uint8)   # bit 1: +1, bit 0: -1
        self.round_scores = np.full(self.count, -np.inf)
        self.participations = np.zeros(self.count, dtype=int)   # rounds each canary took part
        self.start = None
        self.previous = None
        self.seconds = 0.0            # spent scoring (the round loop adds to it)

    def directions(self, ids: Sequence[int]) -> np.ndarray:
        """[len(ids), d] unit directions of the canaries ``ids`` (float32)."""
        bits = np.unpackbits(self.signs[np.asarray(ids, dtype=int)], axis=1, count=self.size)
        return (bits.astype(np.float32) * 2.0 - 1.0) / np.float32(np.sqrt(self.size))

    def sample(self, rnd: int) -> np.ndarray:
        """The inserted canaries taking part in round ``rnd`` (Poisson with the group's rate,
        a stream of (seed, round): the same after a restart)."""
        draw = np.random.default_rng([self.seed, 3, rnd]).random(self.count) < self.rate
        chosen = np.flatnonzero(draw & self.inserted)
        self.participations[chosen] += 1
        return chosen

    def updates(self, ids: Sequence[int]) -> List[np.ndarray]:
        """What the canaries ``ids`` send: C u_j, as [K, ...] arrays in the model's shapes."""
        flat = self.directions(ids) * self.clip
        out, at = [], 0
        for s in self.shapes:
            n = int(np.prod(s))
            out.append(flat[:, at:at + n].reshape((len(ids),) + s))
            at += n
        return out

    def _cosines(self, change: np.ndarray) -> np.ndarray:
        """cos(change, u_j) for every canary: s_j . c = 2 (bits_j . c) - sum(c), in blocks of
        ``BLOCK`` canaries so only [BLOCK, d] bits are unpacked at a time."""
        c = np.asarray(change, dtype=np.float32)
        norm = max(float(np.linalg.norm(change)), 1e-30)
        total = float(np.sum(change))
        dots = np.concatenate([
            np.unpackbits(self.signs[b:b + BLOCK], axis=1, count=self.size).astype(np.float32)
            @ c for b in range(0, self.count, BLOCK)]).astype(np.float64)
        return (2.0 * dots - total) / (np.sqrt(self.size) * norm)

    def observe(self, weights) -> None:
        """After a round: score this round's model change (the ``rounds`` observer)."""
        flat = np.concatenate([np.ravel(w) for w in weights]).astype(np.float64)
        if self.start is None:
            raise RuntimeError("CanaryAudit.begin(initial weights) first")
        self.round_scores = np.maximum(self.round_scores, self._cosines(flat - self.previous))
        self.previous = flat

    def begin(self, weights) -> None:
        self.start = np.concatenate([np.ravel(w) for w in weights]).astype(np.float64)
        self.previous = self.start.copy()

    def report(self, weights, delta: float, ledger_epsilon, confidence: float = 0.95,
               resamples: int = 500) -> dict:
        """Per observer: Andrew et al.'s estimate with its 90% bootstrap interval (seeded by
        the audit's seed) and Steinke et al.'s lower bound, family-wise at ``confidence``,
        with the audit's ceiling and its verdict on the ledger's epsilon of the group
        (tff_idp.audit.bounds). ``ledger_epsilon``: a number, or a string for a run that is
        not private (no verdict then)."""
        final = self._cosines(np.concatenate([np.ravel(w) for w in weights]) - self.start)
        claimed = ledger_epsilon if isinstance(ledger_epsilon, (int, float)) else None
        out = {"group": self.group, "canaries": self.count,
               "inserted": int(self.inserted.sum()),
               "inserted_never_sampled": int((self.inserted & (self.participations == 0)).sum()),
               "delta": delta,
               "ledger_epsilon": ledger_epsilon, "confidence": confidence,
               "scores": "cosine of the model change with each canary's direction",
               "estimate_interval": f"90% percentile bootstrap over {resamples} resamples "
                                    "of the canaries' scores (seeded)"}
        ins, out_scores = self.round_scores[self.inserted], self.round_scores[~self.inserted]
        estimators = {  # final model: the closed-form null; every round: the max of T cosines
            "final_model": (lambda a: bounds.one_shot_epsilon_null(a, self.size, delta),
                            [final[self.inserted]]),
            "every_round": (lambda a, b: bounds.one_shot_epsilon(a, b, delta),
                            [ins, out_scores])}
        for i, (name, scores) in enumerate((("final_model", final),
                                            ("every_round", self.round_scores))):
            estimate, samples = estimators[name]
            out[name] = {
                "one_shot_estimate": estimate(*samples),
                "one_shot_interval": list(bounds.bootstrap_interval(
                    estimate, samples, seed=[self.seed, 4, i], resamples=resamples)),
                "lower_bound": bounds.best_lower_bound(scores, self.inserted, delta,
                                                       confidence, claimed_epsilon=claimed)}
        # per canary, for the run folder's canaries.csv and histogram (engine.persist)
        out["canary_scores"] = {"inserted": self.inserted.tolist(),
                                "participations": self.participations.tolist(),
                                "final_model": final.tolist(),
                                "every_round": self.round_scores.tolist()}
        return out
