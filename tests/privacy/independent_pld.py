"""An independent privacy-loss-distribution accountant for the tests, sharing no code with
``tff_idp.privacy`` or dp-accounting's PLD routines.

A round's output pair (P, Q) (P: the target client present, Q: absent; add/remove) is given as
a mixture of unit-variance Gaussians over the released coordinate (means 0 or 1 in units of
the clip, std z) plus, optionally, an *atom*: an exact, un-noised output (an empty round that
releases nothing) with its own probability under P and under Q. The privacy loss
L = log(P / Q) of one round is tabulated on a fine grid of outputs, its distribution under P
discretised on a loss grid (rounded up: pessimistic), composed T times by FFT, and

    delta(epsilon) = E_P[(1 - e^(epsilon - L))_+] + (P's mass where Q has none)

(the hockey-stick divergence, Sommer, Meiser, Mohammadi 2019; Koskela, Jalko, Honkela 2020).
Both directions (P vs Q and Q vs P) are computed and the larger delta kept.
"""
import math

import numpy as np
from scipy import stats


def _one_round(p_parts, q_parts, p_atom, q_atom, z, grid_step):
    """Loss values and their P-probabilities of one round, on an output grid; the tails
    beyond 12 std count as infinite loss (pessimistic)."""
    x = np.arange(-12 * z, 1 + 12 * z, z / 2000)
    pdf = lambda parts: sum(wt * stats.norm.pdf(x, mu, z) for wt, mu in parts)
    p, q = pdf(p_parts), pdf(q_parts)
    mass = p * (x[1] - x[0])
    loss = np.log(p) - np.log(q)
    tail = 1.0 - mass.sum() - p_atom           # P's mass outside the grid: infinite loss
    losses, probs = list(loss), list(mass)
    if p_atom > 0:
        losses.append(math.log(p_atom / q_atom) if q_atom > 0 else math.inf)
        probs.append(p_atom)
    return np.array(losses), np.array(probs), max(tail, 0.0)


def _delta(losses, probs, inf_mass, rounds, epsilon, grid_step):
    finite = np.isfinite(losses)
    inf_mass = inf_mass + probs[~finite].sum()
    losses, probs = losses[finite], probs[finite]
    lo = math.floor(losses.min() / grid_step)
    idx = np.ceil(losses / grid_step - 1e-9).astype(int) - lo
    pmf = np.bincount(idx, weights=probs)
    size = len(pmf) * rounds
    n = 1 << int(math.ceil(math.log2(size)))
    total = np.fft.irfft(np.fft.rfft(pmf, n) ** rounds, n)[:size - rounds + 1]
    total = np.clip(total, 0, None)
    values = (np.arange(len(total)) + lo * rounds) * grid_step
    keep = values > epsilon
    d = float(np.sum(total[keep] * -np.expm1(epsilon - values[keep])))
    return d + (1 - (1 - inf_mass) ** rounds)


def delta(p_parts, q_parts, rounds, epsilon, z, p_atom=0.0, q_atom=0.0, grid_step=2e-4):
    """max over both directions of delta(epsilon) after ``rounds`` compositions."""
    out = 0.0
    for a, b, pa, qa in ((p_parts, q_parts, p_atom, q_atom), (q_parts, p_parts, q_atom, p_atom)):
        losses, probs, tail = _one_round(a, b, pa, qa, z, grid_step)
        out = max(out, _delta(losses, probs, tail, rounds, epsilon, grid_step))
    return out


def epsilon(p_parts, q_parts, rounds, target_delta, z, p_atom=0.0, q_atom=0.0):
    """The smallest epsilon (to 1e-3) with :func:`delta` <= target_delta."""
    lo, hi = 0.0, 1.0
    while delta(p_parts, q_parts, rounds, hi, z, p_atom, q_atom) > target_delta:
        lo, hi = hi, 2 * hi
    while hi - lo > 1e-3:
        mid = (lo + hi) / 2
        if delta(p_parts, q_parts, rounds, mid, z, p_atom, q_atom) > target_delta:
            lo = mid
        else:
            hi = mid
    return hi


def poisson_round(q, population):
    """(P parts, Q parts, P atom, Q atom) of one round of the Poisson-sampled Gaussian on
    clients whose updates are 0 but the target's (1, the clip): with ``population`` = None
    every round releases its noise (no atom); otherwise the round with nobody sampled
    releases an exact zero: P's atom (1-q)^n, Q's (1-q)^(n-1), n = population."""
    if population is None:
        return [(1 - q, 0.0), (q, 1.0)], [(1.0, 0.0)], 0.0, 0.0
    others_empty = (1 - q) ** (population - 1)
    p = [((1 - q) * (1 - others_empty), 0.0), (q, 1.0)]
    qq = [(1 - others_empty, 0.0)]
    return p, qq, (1 - q) * others_empty, others_empty
