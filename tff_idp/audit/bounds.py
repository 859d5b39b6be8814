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
  Gaussians apart. An estimate, not a bound: its spread comes from the fitted standard
  deviations' sampling error (with ~500 inserted canaries an ideal mechanism at epsilon 0.5
  is estimated above 0.5 in a sizeable share of seeds: docs/audit.md measures it), so it is
  reported with a seeded bootstrap interval (:func:`bootstrap_interval`).
- **One-run lower bound** (Steinke, Nasr, Jagielski, "Privacy Auditing with One (1) Training
  Run", NeurIPS 2023, Thm. 3 / Alg. 1): each of m canaries is inserted with probability 1/2;
  the auditor guesses "in" for the k+ highest scores and "out" for the k- lowest and abstains
  on the rest; if the mechanism were (epsilon, delta)-DP, the number of correct guesses W out
  of r would satisfy P[W >= v] <= P[Bin(r, p) >= v] + 2 m delta max_{i = 1..v} P[v - i <=
  Bin(r, p) < v] / i with p = e^epsilon / (1 + e^epsilon) (:func:`p_value`); the largest
  epsilon that the observed v rejects at confidence 1 - beta is a lower bound
  (:func:`lower_bound`). Thm. 3 covers one guess count fixed in advance;
  :func:`best_lower_bound` tries n counts and tests each at beta / n (a union bound), so the
  largest of them holds at 1 - beta family-wise. With m canaries no outcome gives more than
  the audit's :func:`ceiling` (the 2 m delta term caps it): below a claimed epsilon the
  audit cannot detect a leak at all, and :func:`canaries_needed` says how many would.

A bound below the claim says nothing unless the audit could have found a leak. **Power**
(:func:`detection_power`): the probability that the audit's bound exceeds the claimed
epsilon when the mechanism's true epsilon is larger. The true mechanism is taken as the
Gaussian mechanism whose privacy profile passes through (true epsilon, delta) at the run's
delta (Balle & Wang; :func:`gaussian_mu`), each canary's score N(mu, 1) when inserted and
N(0, 1) when not: the ideal canaries of Steinke et al.'s and Andrew et al.'s experiments,
the most an auditor with this mechanism's scores could see. It is estimated by Monte Carlo
(seeded; common random numbers across epsilons, so it is monotone in epsilon) through the
exact guess rule of :func:`best_lower_bound` (:func:`detection_thresholds`: the correct
guesses each count needs). :func:`detectable_epsilon` is the smallest true epsilon
detected with probability 0.8. The verdict on a claim is "leak detected" (bound above
it), "no leak detected" (bound below it and power at twice the claim at least 0.8) or
"cannot detect" (with the detectable epsilon; infinite where the ceiling is not above the
claim).

Example: with 200 canaries, every one of 100 guesses right gives a bound near 3.5 at 95%::

    >>> round(lower_bound(200, 100, 100, 1e-5, 0.95), 1)
    3.5
"""
from __future__ import annotations

import functools
import math
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
from scipy import optimize, special, stats

MAX_CANARIES = 100_000      # the most canaries a run may add (config.audit_canaries)


def cosine_scores(release: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Cosine between a released model change [d] and each canary direction [m, d]."""
    release = np.asarray(release, dtype=float).ravel()
    directions = np.asarray(directions, dtype=float)
    norm = np.linalg.norm(release) * np.linalg.norm(directions, axis=1)
    return directions @ release / np.maximum(norm, 1e-300)


def gaussian_pair_delta(epsilon: float, mean_in: float, std_in: float, mean_out: float,
                        std_out: float) -> float:
    """delta(epsilon) of telling N(mean_in, std_in^2) from N(mean_out, std_out^2): the larger
    of the two directions' hockey-stick divergences sup_S P(S) - e^epsilon Q(S), in closed
    form. The supremum is over S = {x: log p(x) - log q(x) > epsilon}, where the log ratio is
    a quadratic in x: S is a half-line, an interval or the complement of one, and P(S),
    Q(S) are normal CDF differences. e^epsilon Q(S) is formed in log space, so any epsilon is
    safe (e^epsilon Q(S) <= P(S) <= 1 on S). Equal stds: Balle & Wang's profile; the tests
    also check it against numerical integration."""
    if std_in <= 0 or std_out <= 0:
        raise ValueError("both standard deviations must be positive")
    return float(max(_hockey_stick(epsilon, mean_in, std_in, mean_out, std_out),
                     _hockey_stick(epsilon, mean_out, std_out, mean_in, std_in)))


def _hockey_stick(epsilon: float, a: float, s: float, b: float, t: float) -> float:
    """sup_S P(S) - e^epsilon Q(S) for P = N(a, s^2), Q = N(b, t^2) (closed form)."""
    # log p(x) - log q(x) - epsilon = c2 x^2 + c1 x + c0
    c2 = 0.5 / t ** 2 - 0.5 / s ** 2
    c1 = a / s ** 2 - b / t ** 2
    c0 = 0.5 * b ** 2 / t ** 2 - 0.5 * a ** 2 / s ** 2 + math.log(t / s) - epsilon
    inf = math.inf
    if abs(c2) < 1e-12 * max(1.0 / s ** 2, 1.0 / t ** 2):       # equal stds: linear
        if c1 == 0:
            region = [(-inf, inf)] if c0 > 0 else []
        elif c1 > 0:
            region = [(-c0 / c1, inf)]
        else:
            region = [(-inf, -c0 / c1)]
    else:
        disc = c1 * c1 - 4 * c2 * c0
        if disc <= 0:
            region = [(-inf, inf)] if c2 > 0 else []
        else:
            r1, r2 = sorted(((-c1 - math.sqrt(disc)) / (2 * c2),
                             (-c1 + math.sqrt(disc)) / (2 * c2)))
            region = [(-inf, r1), (r2, inf)] if c2 > 0 else [(r1, r2)]
    if not region:
        return 0.0
    p_mass = sum(math.exp(_log_mass(lo, hi, a, s)) for lo, hi in region)
    q_mass = sum(math.exp(min(0.0, epsilon + _log_mass(lo, hi, b, t))) for lo, hi in region)
    return max(0.0, p_mass - q_mass)


def _log_mass(lo: float, hi: float, mean: float, std: float) -> float:
    """log P[lo < X < hi] for X ~ N(mean, std^2), accurate in either tail."""
    zl, zh = (lo - mean) / std, (hi - mean) / std
    if zl >= 0:                                   # upper tail: survival functions
        a, b = stats.norm.logsf(zl), stats.norm.logsf(zh)
    else:
        a, b = stats.norm.logcdf(zh), stats.norm.logcdf(zl)
    if b == -math.inf:
        return float(a)
    if a <= b:
        return -math.inf
    return float(a + math.log1p(-math.exp(b - a)))


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


def _separating_epsilon(fit, delta: float, cap: float = 1e4) -> float:
    """The smallest epsilon whose delta between the fitted pair is at most ``delta``; inf when
    even ``cap`` does not separate them (the pair's delta is formed in log space, so a large
    epsilon never overflows)."""
    f = lambda e: gaussian_pair_delta(e, *fit) - delta
    if f(0.0) <= 0:
        return 0.0
    high = 1.0
    while f(high) > 0:
        if high >= cap:
            return math.inf
        high = min(2 * high, cap)
    return float(optimize.brentq(f, 0.0, high, xtol=1e-6))


def bootstrap_interval(statistic: Callable[..., float], samples: Sequence[Sequence[float]],
                       seed, resamples: int = 500, level: float = 0.90) -> Tuple[float, float]:
    """Percentile bootstrap interval (Efron) of ``statistic(*samples)``: each sample resampled
    with replacement, independently, ``resamples`` times from a seeded generator; the
    (1 - level)/2 and (1 + level)/2 quantiles of the statistic over the resamples; ``seed``:
    anything ``numpy.random.default_rng`` takes. Used for
    Andrew et al.'s estimate, whose spread comes mostly from the fitted standard deviations
    (docs/audit.md measures it on the ideal mechanism)."""
    if not 0 < level < 1:
        raise ValueError(f"level={level!r} must be in (0, 1)")
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(x, float) for x in samples]
    values = np.array([statistic(*(x[rng.integers(0, len(x), len(x))] for x in arrays))
                       for _ in range(resamples)])
    lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """Steinke et al., Thm. 3: an upper bound on P[at least v of r guesses right] among m
    canaries each inserted with probability 1/2, for an (epsilon, delta)-DP mechanism:
    P[Bin(r, p) >= v] + 2 m delta max_{i = 1..v} P[v - i <= Bin(r, p) < v] / i with
    p = e^epsilon / (1 + e^epsilon). The windows are suffix sums of one vector of binomial
    probabilities (two scipy calls, whatever v)."""
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got v={v}, r={r}, m={m}")
    p = float(special.expit(epsilon))
    tail = float(stats.binom.sf(v - 1, r, p))
    if v == 0 or delta == 0:
        return min(1.0, tail)
    window = np.cumsum(stats.binom.pmf(np.arange(v - 1, -1, -1), r, p))   # i = 1..v
    worst = float(np.max(window / np.arange(1, v + 1)))
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


FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.5)    # guess counts tried: r = fraction x m


def guess_counts(m: int, fractions: Sequence[float] = FRACTIONS) -> List[int]:
    """k_in = k_out = fraction x m / 2 for each fraction (at least 1): the guess counts
    r = 2k that :func:`best_lower_bound` tries."""
    return [max(1, int(round(f * m / 2))) for f in fractions]


def ceiling(m: int, delta: float, confidence: float = 0.95,
            fractions: Sequence[float] = FRACTIONS) -> float:
    """The largest bound :func:`best_lower_bound` can report with m canaries: every guess
    right at the best of its guess counts, each tested at the family-wise share of beta. The
    2 m delta term of Thm. 3 caps it: no score, however separated, gives more. An audit whose
    ceiling is below a claimed epsilon cannot detect a leak at that epsilon."""
    per_test = 1.0 - (1.0 - confidence) / len(fractions)
    return max(lower_bound(m, 2 * k, 2 * k, delta, per_test) for k in guess_counts(m, fractions))


def ceiling_by_canaries(delta: float, confidence: float = 0.95,
                        fractions: Sequence[float] = FRACTIONS,
                        most: int = MAX_CANARIES) -> List[Tuple[int, float]]:
    """(m, :func:`ceiling`) for m = 25 x 2^j up to ``most``. Not monotone in m: more canaries
    allow more guesses, but Thm. 3's 2 m delta term grows with m (at delta = 1.07e-3 the
    ceiling peaks near 0.8 at 50-100 canaries)."""
    grid, m = [], 25
    while m <= most:
        grid.append((m, ceiling(m, delta, confidence, fractions)))
        m *= 2
    return grid


def canaries_needed(epsilon: float, delta: float, confidence: float = 0.95,
                    fractions: Sequence[float] = FRACTIONS,
                    most: int = MAX_CANARIES) -> dict:
    """The smallest canary count of :func:`ceiling_by_canaries` whose ceiling exceeds
    ``epsilon`` (None when none does), and the grid's largest ceiling with its count."""
    grid = ceiling_by_canaries(delta, confidence, fractions, most)
    enough = [m for m, c in grid if c > epsilon]
    peak_m, peak = max(grid, key=lambda mc: mc[1])
    return {"canaries": enough[0] if enough else None,
            "largest_ceiling": peak, "at_canaries": peak_m}


def best_lower_bound(scores: Sequence[float], inserted: Sequence[bool], delta: float,
                     confidence: float = 0.95, fractions: Sequence[float] = FRACTIONS,
                     claimed_epsilon: Optional[float] = None) -> dict:
    """Steinke et al.'s bound, family-wise at ``confidence``: :func:`lower_bound` for each
    guess count of :func:`guess_counts`, each tested at confidence 1 - beta / n for n counts
    (a union bound: Thm. 3 covers a count fixed in advance, and reporting the largest of n
    tests at beta each would hold only at about 1 - n beta), the largest of them with the
    guesses it rests on, and the audit's :func:`ceiling`. With ``claimed_epsilon`` (the
    ledger's), a ``verdict`` (:func:`verdict`: "leak detected", "no leak detected" only
    with power at least 0.8 against twice the claim, else "cannot detect" with the
    detectable epsilon), and, where the ceiling is not above the claim (no outcome of this
    audit could show a leak), :func:`canaries_needed`'s answer."""
    m = len(scores)
    per_test = 1.0 - (1.0 - confidence) / len(fractions)
    best = {"epsilon": 0.0, "guesses": 0, "correct": 0, "canaries": m,
            "confidence": confidence, "per_test_confidence": per_test,
            "correction": f"union bound over {len(fractions)} guess counts "
                          f"(each tested at beta / {len(fractions)})",
            "ceiling": ceiling(m, delta, confidence, fractions)}
    for k in guess_counts(m, fractions):
        r, v = guesses(scores, inserted, k, k)
        eps = lower_bound(m, r, v, delta, per_test)
        if eps > best["epsilon"]:
            best.update(epsilon=eps, guesses=r, correct=v)
    if claimed_epsilon is not None:
        best.update(verdict(best["epsilon"], claimed_epsilon, m, delta, confidence, fractions))
        if best["verdict"] == CANNOT_DETECT and best["ceiling"] <= claimed_epsilon:
            best["canaries_needed"] = canaries_needed(claimed_epsilon, delta, confidence,
                                                      fractions)
    return best


LEAK, NO_LEAK, CANNOT_DETECT = "leak detected", "no leak detected", "cannot detect"
POWER = 0.8                   # the detection probability "no leak detected" asks for
POWER_AT = 2.0                # ... against a true epsilon this many times the claim
POWER_TRIALS = 1000           # Monte Carlo audits per power estimate (std error <= 1.6%)
POWER_SEED = 0                # their draws: the same at every epsilon (common random numbers)


def verdict(bound: float, claimed_epsilon: float, m: int, delta: float,
            confidence: float = 0.95, fractions: Sequence[float] = FRACTIONS) -> dict:
    """What a bound says about a claimed epsilon (module docstring): "leak detected" when
    the bound exceeds it; else "no leak detected" only when the audit detects a true
    epsilon of :data:`POWER_AT` x the claim with probability at least :data:`POWER`, and
    "cannot detect" otherwise. Every verdict but a leak carries ``power_at_twice_claim``
    and ``detectable_epsilon`` (the smallest true epsilon detected with probability
    :data:`POWER`; inf when none is)."""
    if bound > claimed_epsilon:
        return {"verdict": LEAK}
    power, detectable = _power(float(claimed_epsilon), int(m), float(delta), float(confidence),
                               tuple(fractions))
    return {"verdict": NO_LEAK if power >= POWER else CANNOT_DETECT,
            "power_at_twice_claim": power, "detectable_epsilon": detectable,
            "power_method": POWER_METHOD}


def verdict_words(outcome: dict) -> str:
    """A verdict as tables print it: "cannot detect (detects 16.4)" names the smallest true
    epsilon the audit detects with probability 0.8 ("detects nothing" where none is)."""
    words = outcome["verdict"]
    if words != CANNOT_DETECT or "detectable_epsilon" not in outcome:
        return words
    found = outcome["detectable_epsilon"]
    return f"{words} (detects {found:.3g})" if math.isfinite(found) else \
        f"{words} (detects nothing)"


POWER_METHOD = (f"ideal Gaussian canaries (scores N(mu, 1) inserted, N(0, 1) not, mu the "
                f"Gaussian mechanism's at (epsilon, delta)), {POWER_TRIALS} seeded Monte "
                f"Carlo audits; detectable: power {POWER}")


@functools.lru_cache(maxsize=256)
def _power(claimed_epsilon, m, delta, confidence, fractions):
    """(power at twice the claim, detectable epsilon) of an audit: the same for every run
    with the same canary count, delta and claim, so computed once per process."""
    return (detection_power(POWER_AT * claimed_epsilon, m, delta, claimed_epsilon,
                            confidence, fractions),
            detectable_epsilon(m, delta, claimed_epsilon, confidence, fractions))


def gaussian_mu(epsilon: float, delta: float) -> float:
    """mu (sensitivity / noise std) of the Gaussian mechanism that is exactly
    (epsilon, delta)-DP: delta(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon
    Phi(-epsilon/mu - mu/2) (Balle & Wang 2018, Thm. 8), solved for mu."""
    if epsilon < 0 or not 0 < delta < 1:
        raise ValueError(f"epsilon={epsilon!r}, delta={delta!r}: need epsilon >= 0, "
                         "0 < delta < 1")
    f = lambda mu: gaussian_pair_delta(epsilon, mu, 1.0, 0.0, 1.0) - delta
    if f(1e-9) >= 0:
        return 1e-9
    high = 1.0
    while f(high) < 0:
        high *= 2
    return float(optimize.brentq(f, 1e-9, high, xtol=1e-10))


def detection_thresholds(m: int, delta: float, claimed_epsilon: float,
                         confidence: float = 0.95,
                         fractions: Sequence[float] = FRACTIONS) -> List[Optional[int]]:
    """Per guess count k of :func:`guess_counts`: the fewest correct guesses of 2k that make
    :func:`best_lower_bound` exceed ``claimed_epsilon`` (its per-count test at
    1 - beta / n rejects the claim: :func:`p_value` at the claim below beta / n, which falls
    as correct guesses rise); None where even all 2k right do not."""
    beta = (1.0 - confidence) / len(fractions)
    out = []
    for k in guess_counts(m, fractions):
        r = 2 * k
        if p_value(m, r, r, claimed_epsilon, delta) >= beta:
            out.append(None)
            continue
        lo, hi = 0, r                      # p_value(lo) >= beta > p_value(hi)
        if p_value(m, r, 0, claimed_epsilon, delta) < beta:
            out.append(0)
            continue
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if p_value(m, r, mid, claimed_epsilon, delta) < beta:
                hi = mid
            else:
                lo = mid
        out.append(hi)
    return out


def detection_power(true_epsilon: float, m: int, delta: float, claimed_epsilon: float,
                    confidence: float = 0.95, fractions: Sequence[float] = FRACTIONS,
                    trials: int = POWER_TRIALS,
                    thresholds: Optional[List[Optional[int]]] = None) -> float:
    """The probability that the audit of ``m`` canaries (:func:`best_lower_bound`) detects a
    leak (bound above ``claimed_epsilon``) when the mechanism is the Gaussian mechanism of
    true epsilon ``true_epsilon`` at ``delta`` (module docstring): the share of ``trials``
    seeded simulated audits (each canary inserted with probability 1/2, scores N(mu, 1) in
    and N(0, 1) out, ties impossible) whose correct guesses reach a count's threshold
    (:func:`detection_thresholds`). The draws are seeded (:data:`POWER_SEED`, the canary
    count): the same at every epsilon, so the estimate rises with ``true_epsilon``."""
    if thresholds is None:
        thresholds = detection_thresholds(m, delta, claimed_epsilon, confidence, fractions)
    counts = guess_counts(m, fractions)
    if all(t is None for t in thresholds):
        return 0.0
    mu = gaussian_mu(true_epsilon, delta)
    rng = np.random.default_rng([POWER_SEED, m])
    detected = 0
    chunk = max(1, min(trials, 2_000_000 // m))         # at most ~16 MB of scores at once
    for start in range(0, trials, chunk):
        n = min(chunk, trials - start)
        inserted = rng.random((n, m)) < 0.5
        scores = rng.standard_normal((n, m)) + mu * inserted
        ranked = np.take_along_axis(inserted, np.argsort(-scores, axis=1), axis=1)
        top_in = np.cumsum(ranked, axis=1)                 # inserted among the top j + 1
        bottom_out = np.cumsum(~ranked[:, ::-1], axis=1)   # not inserted among the lowest
        hit = np.zeros(n, bool)
        for k, need in zip(counts, thresholds):
            if need is not None:
                hit |= top_in[:, k - 1] + bottom_out[:, k - 1] >= need
        detected += int(hit.sum())
    return detected / trials


def detectable_epsilon(m: int, delta: float, claimed_epsilon: float, confidence: float = 0.95,
                       fractions: Sequence[float] = FRACTIONS, power: float = POWER,
                       largest: float = 1e3, rtol: float = 0.01) -> float:
    """The smallest true epsilon that the audit of ``m`` canaries detects (bound above
    ``claimed_epsilon``) with probability at least ``power`` (:func:`detection_power`),
    by bisection on a log scale to ``rtol``; inf when not even ``largest`` is (e.g. the
    ceiling is not above the claim)."""
    thresholds = detection_thresholds(m, delta, claimed_epsilon, confidence, fractions)
    hits = lambda e: detection_power(e, m, delta, claimed_epsilon, confidence, fractions,
                                     thresholds=thresholds) >= power
    if all(t is None for t in thresholds) or not hits(largest):
        return math.inf
    lo, hi = max(claimed_epsilon, 1e-3), largest
    if hits(lo):
        return float(lo)
    while hi / lo > 1 + rtol:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if hits(mid) else (mid, hi)
    return float(hi)
