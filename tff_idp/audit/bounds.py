"""Empirical privacy from canary scores: an estimate and a lower bound (no TensorFlow).

A canary client's update is a fixed random unit direction times its group's clip; it is
inserted into training or not, and afterwards each canary gets a *score*: the cosine between
the released model change and its direction (:func:`cosine_scores`). Two ways to read them:

- **One-shot estimate** (Andrew, Kairouz, Oh, Oprea, McMahan, Suriyakumar, "One-shot
  Empirical Privacy Estimation for Federated Learning", ICLR 2024, Alg. 2 and Sec. 4): fit a
  Gaussian to the scores of the inserted canaries; the scores of canaries never inserted
  follow the cosine of a random unit direction with a fixed vector, N(0, 1/d) in d
  dimensions (their closed-form null, :func:`one_shot_epsilon_null`), or, where that does not
  hold (the largest of several rounds' cosines), a Gaussian fitted to them too
  (:func:`one_shot_epsilon`); report the epsilon, at the run's delta, of telling the two
  Gaussians apart. An estimate, not a bound: with a few hundred canaries the fitted std's
  sampling error moves it by several percent.
- **One-run lower bound** (Steinke, Nasr, Jagielski, "Privacy Auditing with One (1) Training
  Run", NeurIPS 2023, Thm. 3 / Alg. 1): each of m canaries is inserted with probability 1/2;
  the auditor guesses "in" for the k+ highest scores and "out" for the k- lowest and abstains
  on the rest; if the mechanism were (epsilon, delta)-DP, the number of correct guesses W out
  of r would satisfy P[W >= v] <= P[Bin(r, p) >= v] + 2 m delta max_{i = 1..v} P[v - i <=
  Bin(r, p) < v] / i with p = e^epsilon / (1 + e^epsilon) (:func:`p_value`); the largest
  epsilon that the observed v rejects at confidence 1 - beta is a lower bound
  (:func:`lower_bound`), maximised over the guess counts tried (:func:`best_lower_bound`;
  each count is a separate test, so the maximum is reported with the counts tried, as the
  paper does).

Example: with 200 canaries, every one of 100 guesses right gives a bound near 3.5 at 95%::

    >>> round(lower_bound(200, 100, 100, 1e-5, 0.95), 1)
    3.5
"""
from __future__ import annotations

import math
from typing import Sequence, Tuple

import numpy as np
from scipy import optimize, stats


def cosine_scores(release: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Cosine between a released model change [d] and each canary direction [m, d]."""
    release = np.asarray(release, dtype=float).ravel()
    directions = np.asarray(directions, dtype=float)
    norm = np.linalg.norm(release) * np.linalg.norm(directions, axis=1)
    return directions @ release / np.maximum(norm, 1e-300)


def gaussian_pair_delta(epsilon: float, mean_in: float, std_in: float, mean_out: float,
                        std_out: float) -> float:
    """delta(epsilon) of telling N(mean_in, std_in^2) from N(mean_out, std_out^2), the larger
    of the two directions' hockey-stick divergences sup_S P(S) - e^epsilon Q(S), integrated
    numerically on a grid of 200,001 points over +-12 of the larger std (equal stds: Balle &
    Wang's closed form, which the tests check it against)."""
    if std_in <= 0 or std_out <= 0:
        raise ValueError("both standard deviations must be positive")
    spread = max(std_in, std_out)
    lo = min(mean_in, mean_out) - 12 * spread
    hi = max(mean_in, mean_out) + 12 * spread
    x = np.linspace(lo, hi, 200_001)
    dx = x[1] - x[0]
    p = stats.norm.pdf(x, mean_in, std_in)
    q = stats.norm.pdf(x, mean_out, std_out)
    one = np.sum(np.maximum(p - math.exp(epsilon) * q, 0.0)) * dx
    two = np.sum(np.maximum(q - math.exp(epsilon) * p, 0.0)) * dx
    return float(max(one, two))


def one_shot_epsilon(scores_in: Sequence[float], scores_out: Sequence[float],
                     delta: float) -> float:
    """Andrew et al.'s estimate (module docstring) with both sides fitted: the smallest
    epsilon whose :func:`gaussian_pair_delta` between the Gaussians fitted to the inserted and
    the never inserted canaries' scores is at most ``delta``."""
    a, b = np.asarray(scores_in, float), np.asarray(scores_out, float)
    if len(a) < 2 or len(b) < 2:
        raise ValueError("need at least two inserted and two never-inserted canaries")
    return _separating_epsilon((a.mean(), max(a.std(ddof=1), 1e-12), b.mean(),
                                max(b.std(ddof=1), 1e-12)), delta)


def one_shot_epsilon_null(scores_in: Sequence[float], dim: int, delta: float) -> float:
    """Andrew et al.'s estimate with their closed-form null: the inserted canaries' scores
    fitted by a Gaussian, the never inserted ones' N(0, 1/d) (the cosine of a random unit
    direction in d dimensions with any vector independent of it; Gaussian from a few hundred
    dimensions on)."""
    a = np.asarray(scores_in, float)
    if len(a) < 2:
        raise ValueError("need at least two inserted canaries")
    return _separating_epsilon((a.mean(), max(a.std(ddof=1), 1e-12), 0.0, dim ** -0.5), delta)


def _separating_epsilon(fit, delta: float) -> float:
    f = lambda e: gaussian_pair_delta(e, *fit) - delta
    if f(0.0) <= 0:
        return 0.0
    high = 1.0
    while f(high) > 0:
        high *= 2
        if high > 1e4:
            return math.inf
    return float(optimize.brentq(f, 0.0, high, xtol=1e-6))


def p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """Steinke et al., Thm. 3: an upper bound on P[at least v of r guesses right] among m
    canaries each inserted with probability 1/2, for an (epsilon, delta)-DP mechanism."""
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got v={v}, r={r}, m={m}")
    p = 1.0 / (1.0 + math.exp(-epsilon))
    tail = float(stats.binom.sf(v - 1, r, p))
    worst, window = 0.0, 0.0
    for i in range(1, v + 1):                 # P[v - i <= Bin(r, p) < v] / i, maximised
        window += float(stats.binom.pmf(v - i, r, p))
        worst = max(worst, window / i)
    return min(1.0, tail + 2 * m * delta * worst)


def lower_bound(m: int, r: int, v: int, delta: float, confidence: float = 0.95) -> float:
    """The largest epsilon that ``v`` correct guesses out of ``r`` (m canaries) reject at
    ``confidence``: p_value(epsilon) < 1 - confidence below it (0 if even epsilon = 0 is not
    rejected)."""
    beta = 1.0 - confidence
    if not 0 < beta < 1:
        raise ValueError(f"confidence={confidence!r} must be in (0, 1)")
    if p_value(m, r, v, 0.0, delta) >= beta:
        return 0.0
    high = 1.0
    while p_value(m, r, v, high, delta) < beta:
        high *= 2
        if high > 1e3:
            return math.inf
    return float(optimize.brentq(lambda e: p_value(m, r, v, e, delta) - beta, 0.0, high,
                                 xtol=1e-6))


def guesses(scores: Sequence[float], inserted: Sequence[bool], k_in: int,
            k_out: int) -> Tuple[int, int]:
    """(guesses r, correct v): "in" for the ``k_in`` highest scores, "out" for the ``k_out``
    lowest (ties broken by canary index), abstaining on the rest."""
    s, truth = np.asarray(scores, float), np.asarray(inserted, bool)
    if k_in + k_out > len(s) or min(k_in, k_out) < 0:
        raise ValueError(f"k_in={k_in}, k_out={k_out} for {len(s)} canaries")
    order = np.argsort(-s, kind="stable")
    top, bottom = order[:k_in], order[len(s) - k_out:]
    return k_in + k_out, int(truth[top].sum() + (~truth[bottom]).sum())


def best_lower_bound(scores: Sequence[float], inserted: Sequence[bool], delta: float,
                     confidence: float = 0.95,
                     fractions: Sequence[float] = (0.05, 0.1, 0.2, 0.3, 0.5)) -> dict:
    """:func:`lower_bound` for guess counts k_in = k_out = fraction x m / 2, the largest of
    them, with the guesses it rests on."""
    m = len(scores)
    best = {"epsilon": 0.0, "guesses": 0, "correct": 0, "canaries": m,
            "confidence": confidence}
    for frac in fractions:
        k = max(1, int(round(frac * m / 2)))
        r, v = guesses(scores, inserted, k, k)
        eps = lower_bound(m, r, v, delta, confidence)
        if eps > best["epsilon"]:
            best.update(epsilon=eps, guesses=r, correct=v)
    return best
