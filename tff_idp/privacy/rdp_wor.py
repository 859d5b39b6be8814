"""RDP of the Gaussian mechanism on a subsample drawn without replacement, evaluated with
numpy and one table of forward differences per noise multiplier.

Wang, Balle, Kasiviswanathan (2019), "Subsampled Renyi Differential Privacy and Analytical
Moments Accountant", Theorem 27 (arXiv 1808.00087 v2): a subsample of fixed size m = q n
of n records, replace-one neighbours (n public), a base mechanism with RDP eps(alpha); for
the Gaussian of noise multiplier sigma, eps(alpha) = alpha / (2 sigma^2). At integer alpha
the subsampled mechanism's RDP is at most log(A_alpha) / (alpha - 1) with

  A_alpha = 1 + q^2 C(alpha, 2) min(4 (e^eps(2) - 1), 2 e^eps(2))
              + sum_{j=3}^{alpha} q^j C(alpha, j) min(4 sqrt(D_{2 floor(j/2)} D_{2 ceil(j/2)}),
                                                      2 e^((j-1) eps(j))),

D_k the k-th forward difference of exp((x-1) eps(x)) at 0; above order 256 every term takes
the second branch of the min (the Stirling form); between integers Corollary 10's linear
interpolation of (alpha - 1) RDP(alpha) is an upper bound.

This is the bound dp_accounting evaluates (``rdp_privacy_accountant.
_compute_rdp_sample_wor_gaussian``): the same terms, the same table of differences computed
as it does (in log space with signs, each level from the one before), the same cases. Its
loop rebuilds the table for every order (O(alpha^2) Python operations each; an RDP curve on
its default orders is about 2 million of them) although the k-th difference does not depend
on the order; here the table is built once per noise multiplier, each level one numpy
operation, and every order's sum is one array: a plan of three fixed-size groups goes from
11-18 s to about 1 s (docs/privacy.md, ``scripts/accounting_cost.py``). Equal to
dp_accounting's values up to float64 rounding (tests/privacy/test_rdp_wor.py). Free of
TensorFlow, like all of ``tff_idp.privacy``.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .rdp_series import log_comb

# dp_accounting's: above this order the bound is summed in its Stirling form
_MAX_EXACT_ORDER = 256


def _gaussian_cgf(x, sigma: float):
    """x (x + 1) / (2 sigma^2): the log of the Gaussian's (x+1)-th moment of its privacy loss
    ratio (dp_accounting's ``cgf``, the same operations in the same order)."""
    return x * 1.0 * (x + 1) / (2.0 * sigma ** 2)


def _difference_level(mag: np.ndarray, sign: np.ndarray):
    """One level of the forward differences in log space with signs: entry j of the result is
    (entry j+1) - (entry j) of the input, as dp_accounting's ``_stable_inplace_diff_in_log``
    computes it one entry at a time (its log-subtraction where the signs agree, sign flipped
    for two negatives; its log-addition where they differ)."""
    x, y = mag[:-1], mag[1:]
    sx, sy = sign[:-1], sign[1:]
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        # _log_sub_sign(y, x): log|e^y - e^x| and whether e^y >= e^x
        sub = np.where(y > x, y + np.log(1 - np.exp(x - y)),
                       np.where(y < x, x + np.log(1 - np.exp(y - x)), -np.inf))
        sub_sign = ~(y < x)
        sub_sign = np.where(sy, sub_sign, ~sub_sign)
        # _log_add(x, y)
        lo, hi = np.minimum(x, y), np.maximum(x, y)
        add = np.where(lo == -np.inf, hi, np.log1p(np.exp(lo - hi)) + hi)
    same = sx == sy
    return np.where(same, sub, add), np.where(same, sub_sign, sy)


def log_forward_differences(sigma: float, count: int) -> np.ndarray:
    """dp_accounting's ``_get_forward_diffs(cgf, n)`` for every n up to ``count``: the logs of
    the forward differences of (1, exp(cgf(0)), exp(cgf(1)), ...) at 0, cgf(x) = x (x + 1) /
    (2 sigma^2) (the Gaussian's (x+1)-th moment's log). Entry i comes from the first i + 2
    values alone, so one table of ``count + 2`` entries serves every order up to ``count``."""
    x = np.arange(count + 2, dtype=float)
    mag = np.concatenate([[0.0], _gaussian_cgf(x, sigma)])
    sign = np.ones(count + 3, dtype=bool)
    out = np.empty(count + 2)
    for i in range(count + 2):
        mag, sign = _difference_level(mag, sign)
        out[i] = mag[0]
    return out


def _log_a_ints(q: float, sigma: float, alphas: Sequence[int]) -> dict:
    """log A_alpha of Theorem 27 at each integer order > 1 in ``alphas`` (dp_accounting's
    ``_compute_rdp_sample_wor_gaussian_int``), one table of differences for all of them."""
    eps2 = 1.0 * 2.0 / (2.0 * sigma ** 2)
    second = min(np.log(4) + eps2 + np.log(1 - np.exp(-eps2)), eps2 + np.log(2))
    exact = [a for a in alphas if a <= _MAX_EXACT_ORDER]
    if exact:                   # the min of Theorem 27's two branches, j = 3 .. max(exact)
        top = max(exact)
        i = np.arange(3, top + 1)
        deltas = log_forward_differences(sigma, top)
        lo = deltas[(2 * np.floor(i / 2.0)).astype(int) - 1]
        hi = deltas[(2 * np.ceil(i / 2.0)).astype(int) - 1]
        capped = np.minimum(np.log(4) + 0.5 * (lo + hi), np.log(2) + _gaussian_cgf(i - 1, sigma))
    log_q = np.log(q)
    out = {}
    for alpha in alphas:
        s2 = 2 * log_q + log_comb(alpha, 2) + second
        j = np.arange(3, alpha + 1)
        if alpha <= _MAX_EXACT_ORDER:
            rest = capped[:len(j)] + (j * log_q + log_comb(alpha, j))
        else:
            rest = np.log(2) + _gaussian_cgf(j - 1, sigma) + j * log_q + log_comb(alpha, j)
        out[alpha] = _log_one_plus(np.concatenate([[s2], rest]))
    return out


def _log_one_plus(log_terms: np.ndarray) -> float:
    """log(1 + sum exp(log_terms)), with log1p where every term is below 1 (dp_accounting's
    log-addition onto 1 keeps a tiny sum's digits the same way)."""
    top = float(np.max(log_terms))
    if top <= 0:
        return math.log1p(float(np.sum(np.exp(log_terms))))
    return top + math.log(math.exp(-top) + float(np.sum(np.exp(log_terms - top))))


def wor_gaussian_rdp(q: float, sigma: float, orders: Sequence[float]) -> np.ndarray:
    """RDP at each order of one Gaussian release (noise multiplier sigma = noise std over the
    replace-one sensitivity) on a subsample of a fixed fraction q of the records drawn without
    replacement, the cases as dp_accounting's ``_compute_rdp_sample_wor_gaussian``: 0 at
    q = 0, the Gaussian's alpha / (2 sigma^2) at q = 1, inf at an infinite order or without
    noise (where dp_accounting divides by zero), Theorem 27 at integer orders and Corollary
    10's interpolation between them."""
    orders = [float(a) for a in orders]
    if any(not a > 1 for a in orders) or not 0 <= q <= 1:
        raise ValueError(f"orders must be > 1 and 0 <= q <= 1 (q={q})")
    if q == 0:
        return np.zeros(len(orders))
    if sigma == 0:
        return np.full(len(orders), math.inf)
    if q == 1.0:
        return np.asarray([a / (2 * sigma ** 2) for a in orders])
    finite = [a for a in orders if not math.isinf(a)]
    ints = sorted({int(f) for a in finite for f in (math.floor(a), math.ceil(a)) if f > 1})
    log_a = {1: 0.0, **_log_a_ints(q, sigma, ints)}
    out = np.empty(len(orders))
    for k, alpha in enumerate(orders):
        if math.isinf(alpha):
            out[k] = math.inf
        elif alpha.is_integer():
            out[k] = log_a[int(alpha)] / (alpha - 1)
        else:
            lo, hi = math.floor(alpha), math.ceil(alpha)
            t = alpha - lo
            out[k] = ((1 - t) * log_a[lo] + t * log_a[hi]) / (alpha - 1)
    return out
