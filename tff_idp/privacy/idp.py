"""Individualized DP for FedAvg: SAMPLE and SCALE (Boenisch et al.; paper 004; GDPFed's
baseline IDP-FedAvg, 003 App. B.2).

SAMPLE: one shared noise multiplier sigma, one sampling rate per budget group. For a given
sigma each group's rate is the largest q whose epsilon after T rounds stays within its budget;
sigma is then chosen so that the client-weighted mean rate equals the target rate
(expected clients per round / n). Both searches are root finds on monotone functions.

SCALE: one shared sampling rate q; per-group sigma_p calibrated to each budget; the clients of
group p clip to C_p = C * sigma_bar / sigma_p with sigma_bar = sum_p r_p sigma_p (r_p the
fraction of clients in group p), and one noise of std sigma_bar * C is added. Group p then
sees noise multiplier sigma_bar C / C_p = sigma_p: exactly its calibrated one.

Unlike the public reference code, groups are sorted by budget before rates are paired with
them, a failed calibration raises, and delta is an argument.
"""
from __future__ import annotations

import dataclasses
import math
from typing import List, Optional, Sequence

import numpy as np
from scipy import optimize

from . import accounting


@dataclasses.dataclass(frozen=True)
class SampleCalibration:
    noise_multiplier: float
    rates: List[float]             # per group, in the order the budgets were given
    mean_rate: float               # sum_p r_p q_p
    epsilons: List[float]          # per group, recomputed at (sigma, q_p)


@dataclasses.dataclass(frozen=True)
class ScaleCalibration:
    noise_multiplier: float        # sigma_bar: shared noise std is sigma_bar * base_clip
    clips: List[float]             # C_p per group, in the order the budgets were given
    group_noise_multipliers: List[float]   # sigma_p per group


def _check_groups(budgets, ratios):
    budgets = np.asarray(budgets, dtype=float)
    ratios = np.asarray(ratios, dtype=float)
    if budgets.ndim != 1 or len(budgets) == 0:
        raise ValueError(f"budgets={list(budgets)} must be a non-empty list")
    if len(ratios) != len(budgets):
        raise ValueError(f"ratios={list(ratios)} needs {len(budgets)} entries, one per budget")
    if np.any(budgets <= 0) or np.any(~np.isfinite(budgets)):
        raise ValueError(f"budgets={list(budgets)} must be positive and finite")
    if np.any(ratios <= 0):
        raise ValueError(f"ratios={list(ratios)}: every group needs a positive ratio")
    if abs(ratios.sum() - 1) > 1e-6:
        raise ValueError(f"ratios={list(ratios)} must sum to 1")
    return budgets, ratios


def max_rate(noise_multiplier: float, budget: float, rounds: int, delta: float,
             accountant: str = "rdp", coarse: bool = False, window=None,
             guess: Optional[float] = None) -> float:
    """Largest Poisson rate q in (0, 1] with epsilon(sigma, q, T) <= budget on the
    accountant's full set of orders (the ledger's), so SAMPLE spends the whole budget.

    With RDP the root is first found on :data:`accounting.FAST_RDP_ORDERS` (a subset of the
    orders: its epsilon is an upper bound, its root a feasible rate), then refined on the
    default orders near the optimal one (:func:`accounting.order_window`) and checked on all
    of them. ``coarse=True`` stops after the first stage (feasible, up to a few % low).
    ``window`` (with a ``guess`` of the rate): only the refinement on those orders, unchecked
    (feasible; exact when the optimal order is in the window), for a search that calls this
    many times at nearby sigmas.
    """
    eps = lambda q, orders=None: accounting.epsilon(noise_multiplier, q, rounds, delta,
                                                    accountant, orders=orders) - budget
    if window is not None:
        near = lambda q: eps(q, window)
        if near(1.0) <= 0:
            return 1.0
        lo = min(max(guess or 0.0, 1e-7), 1.0)
        while near(lo) > 0:
            if lo <= 1e-7:
                return 0.0
            lo = max(lo * 0.9, 1e-7)
        return _largest_root(near, lo, _infeasible_above(near, lo))
    if eps(1.0) <= 0:
        return 1.0
    lo = 1e-7
    if eps(lo) > 0:
        return 0.0
    if accountant not in accounting.RDP_ACCOUNTANTS:
        return _largest_root(eps, lo, 1.0)
    fast = lambda q: eps(q, accounting.FAST_RDP_ORDERS)
    if fast(lo) <= 0:
        lo = _largest_root(fast, lo, 1.0, rtol=1e-3)
    if coarse:
        return lo
    window = accounting.order_window(noise_multiplier, lo, rounds, delta,
                                     accountant=accountant)
    q = _largest_root(lambda r: eps(r, window), lo, _infeasible_above(
        lambda r: eps(r, window), lo))
    if eps(q) < -budget * 1e-6:             # the optimum lay outside the window
        q = _largest_root(eps, q, _infeasible_above(eps, q))
    return q


def _infeasible_above(f, feasible: float) -> float:
    """A rate above ``feasible`` where f > 0 (f(1) > 0 is known)."""
    hi = min(1.0, feasible * 1.1)
    while f(hi) <= 0:
        hi = min(1.0, hi * 1.5)
    return hi


def _largest_root(f, lo: float, hi: float, rtol: float = 1e-6) -> float:
    """The root of increasing f in [lo, hi] (f(lo) <= 0 < f(hi)), nudged down until f <= 0:
    the root finder may stop a hair above it."""
    q = float(optimize.brentq(f, lo, hi, xtol=1e-12, rtol=rtol))
    while f(q) > 0:
        q *= 1 - rtol
    return q


def sample_rates(budgets: Sequence[float], ratios: Sequence[float], expected_rate: float,
                 rounds: int, delta: float, accountant: str = "rdp",
                 rate_tolerance: float = 1e-4) -> SampleCalibration:
    """SAMPLE calibration (paper 004 Sec. 3; reference: Boenisch et al. 2023, Alg. 'Sample').

    Returns the shared sigma and one rate per group such that each group's epsilon after
    ``rounds`` rounds is within its budget and sum_p ratio_p q_p equals ``expected_rate`` to a
    relative ``rate_tolerance``.
    """
    budgets, ratios = _check_groups(budgets, ratios)
    if not 0 < expected_rate < 1:
        raise ValueError(f"expected_rate={expected_rate} must be in (0, 1)")
    order = np.argsort(budgets)

    def mean_rate(log_sigma, coarse):
        z = math.exp(log_sigma)
        return sum(r * max_rate(z, e, rounds, delta, accountant, coarse)
                   for e, r in zip(budgets[order], ratios[order]))

    # stage 1: sigma roughly (log sigma to 0.01), with the coarse (fast-order) rates
    coarse = accountant in accounting.RDP_ACCOUNTANTS
    lo, hi = math.log(0.05), math.log(2.0)
    while mean_rate(lo, coarse) > expected_rate:
        lo -= 1.0
        if lo < math.log(1e-4):
            raise ValueError(f"expected_rate={expected_rate} is too low to calibrate")
    while mean_rate(hi, coarse) < expected_rate:
        hi += 1.0
        if hi > math.log(1e4):
            raise ValueError(f"expected_rate={expected_rate} cannot be reached for "
                             f"budgets={list(budgets)}")
    # the mean rate grows about as sigma^2 or faster: log sigma to rate_tolerance / 10
    xtol = rate_tolerance * 0.1
    log_sigma = optimize.brentq(lambda s: mean_rate(s, coarse) - expected_rate, lo, hi,
                                xtol=1e-2 if coarse else xtol)
    if coarse:
        # stage 2: the rates on the default orders near each group's optimal order (the
        # ledger's orders; checked on all of them below), bracketed near stage 1's sigma
        z1 = math.exp(log_sigma)
        guesses = [max_rate(z1, e, rounds, delta, accountant, coarse=True) for e in budgets]
        windows = [accounting.order_window(z1, q, rounds, delta, accountant=accountant)
                   for q in guesses]

        def full(s):
            z = math.exp(s)
            return sum(r * max_rate(z, e, rounds, delta, accountant, window=w, guess=g)
                       for e, r, w, g in zip(budgets, ratios, windows, guesses)) - expected_rate

        hi = log_sigma + 0.01
        while full(hi) < 0:
            hi += 0.02
        lo = hi - 0.04
        while full(lo) > 0:
            lo -= 0.04
        log_sigma = optimize.brentq(full, lo, hi, xtol=xtol)
    z = math.exp(log_sigma)
    rates = [max_rate(z, e, rounds, delta, accountant) for e in budgets]
    for g, (e, q) in enumerate(zip(budgets, rates)):
        if q <= 0:                          # max_rate's floor: not even q = 1e-7 fits
            raise ValueError(
                f"group {g} (budget {e:g}) cannot be met: at the shared sigma {z:.3g} that "
                f"gives mean rate {expected_rate:g}, even a rate of 1e-7 spends more than "
                f"{e:g} in {rounds} rounds at delta {delta:.3g}; raise its budget or "
                "expected_rate, or lower rounds")
    mean = float(np.dot(ratios, rates))
    if abs(mean - expected_rate) > rate_tolerance * expected_rate * 10:
        raise ValueError(f"SAMPLE calibration missed expected_rate={expected_rate} "
                         f"(got {mean:.6g})")
    eps = [accounting.epsilon(z, q, rounds, delta, accountant) for q in rates]  # all orders
    return SampleCalibration(float(z), rates, mean, eps)


def scale_clips(budgets: Sequence[float], ratios: Sequence[float], sampling_rate: float,
                rounds: int, delta: float, base_clip: float, accountant: str = "rdp",
                tolerance=None) -> ScaleCalibration:
    """SCALE calibration (Boenisch et al.; 003 App. B.2): C_p = C sigma_bar / sigma_p with
    sigma_bar = sum_p r_p sigma_p and sigma_p calibrated to budget p at the shared rate."""
    budgets, ratios = _check_groups(budgets, ratios)
    if not base_clip > 0:
        raise ValueError(f"base_clip={base_clip} must be positive")
    sigmas = [accounting.calibrate_noise_multiplier(e, sampling_rate, rounds, delta,
                                                    accountant, tolerance) for e in budgets]
    sigma_bar = float(np.dot(ratios, sigmas))
    return ScaleCalibration(sigma_bar, [base_clip * sigma_bar / s for s in sigmas],
                            [float(s) for s in sigmas])


# Adaptive clipping (Andrew, Thakkar, McMahan, Ramaswamy 2021, "Differentially Private
# Learning with Adaptive Clipping", Alg. 1 and Thm. 1), as paper 004 uses it through TFF.

ADAPTIVE_INITIAL_CLIP = 0.1        # paper 004: TFF's standard set-up [25]
ADAPTIVE_TARGET_QUANTILE = 0.5
ADAPTIVE_LEARNING_RATE = 0.2


def clipped_count_stddev(noise_multiplier: float, cohort: float) -> float:
    """sigma_b, the std of the noise on the sum of the clients' (unclipped - 1/2) bits.
    TFF's default is 0.05 m (m the expected cohort; Andrew et al. Sec. 3 recommend m/20).
    Thm. 1 needs sigma_b > z/2 (below); small laptop-scale cohorts break that, and only then
    sigma_b = z is used (15% more update noise, same total z); paper 004's cohorts (m = 30,
    z < 3) keep TFF's default, as in the paper."""
    default = 0.05 * cohort
    return default if default > noise_multiplier / 2 else float(noise_multiplier)


def value_noise_multiplier(noise_multiplier: float, count_stddev: float) -> float:
    """z_delta of the update given the total z and sigma_b (Andrew et al. Thm. 1): the pair
    (update with z_delta, bits of sensitivity 1/2 with std sigma_b) is as private as one
    Gaussian mechanism with z, where z^-2 = z_delta^-2 + (2 sigma_b)^-2."""
    if noise_multiplier == 0:
        return 0.0
    rest = noise_multiplier ** -2 - (2.0 * count_stddev) ** -2
    if rest <= 0:
        raise ValueError(f"clipped_count_stddev={count_stddev}: must exceed half the noise "
                         f"multiplier {noise_multiplier}")
    return float(rest ** -0.5)
