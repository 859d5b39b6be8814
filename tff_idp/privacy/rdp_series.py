"""RDP of the Poisson-subsampled Gaussian mechanism, its series summed with numpy.

Mironov, Talwar, Zhang (2019), "Renyi Differential Privacy of the Sampled Gaussian
Mechanism": the RDP of order alpha of the mechanism that includes each record with
probability q and adds N(0, sigma^2) to a sum of sensitivity 1 (add/remove-one neighbours)
is log(A_alpha) / (alpha - 1), with A_alpha

- for integer alpha (Sec. 3.3, Eq. (3) expanded binomially):
  A_alpha = sum_{i=0}^{alpha} binom(alpha, i) (1-q)^(alpha-i) q^i exp((i^2 - i) / (2 sigma^2));
- for fractional alpha (Sec. 3.3, Eqs. (4)-(5)): A_alpha = A_0 + A_1, two series over
  i = 0, 1, ... of binom(alpha, i) times Gaussian tail integrals split at
  z0 = sigma^2 log(1/q - 1) + 1/2.

These are the series dp_accounting evaluates term by term in Python
(``rdp_privacy_accountant._compute_log_a_int`` / ``_compute_log_a_frac``): the same terms,
the same stopping rule (the fractional series ends with the first term whose log is below
-30), summed here as arrays, every order of a curve a row of one array (the integer orders
grouped by length). A fractional order at a large rate (q = 0.6) takes ~15 ms there; a
whole curve on the default and the fast orders about 8-13 ms here (docs/privacy.md,
``scripts/accounting_cost.py``), and a SAMPLE calibration evaluates hundreds of curves.
Equal to
dp_accounting's values to float64 summation order (tests/privacy/test_rdp_series.py).
Free of TensorFlow, like all of ``tff_idp.privacy``.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import special

_STOP = -30.0          # dp_accounting's: the fractional series ends at its first term below


def _log_erfc(x):
    """log(erfc(x)) for an array, accurate in the far tail (log_ndtr, as dp_accounting's)."""
    return math.log(2.0) + special.log_ndtr(-x * math.sqrt(2.0))


def _signed_logsumexp_rows(log_terms, signs, kept):
    """Per row, log(sum over the kept entries of sign exp(log_term)); NaN for a row whose sum
    is not positive (cancellation below float64)."""
    logs = np.where(kept, log_terms, -np.inf)
    top = np.max(logs, axis=1, keepdims=True)
    finite_top = np.where(np.isfinite(top), top, 0.0)
    total = np.sum(np.where(kept, signs * np.exp(logs - finite_top), 0.0), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(total > 0, finite_top[:, 0] + np.log(total), np.nan)
    return np.where(top[:, 0] == -np.inf, -np.inf, out)


def log_comb(n, k):
    """log C(n, k) through the log-gamma function (n and k may be arrays, k <= n; as
    dp_accounting's ``_log_comb``)."""
    return special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def log_a_ints(q: float, sigma: float, alphas: Sequence[int]) -> np.ndarray:
    """log A_alpha at each integer order of ``alphas`` (Mironov et al. 2019, Sec. 3.3):
    A_alpha = sum_{i=0}^{alpha} C(alpha, i) (1-q)^(alpha-i) q^i exp((i^2 - i) / (2 sigma^2)),
    one row of one array per order (the entries past alpha left out), the orders grouped by
    the power of two above them so that no row is much longer than its series."""
    alphas = np.asarray(alphas, dtype=float)
    width = 2 ** np.ceil(np.log2(alphas + 1))
    out = np.empty(len(alphas))
    for w in np.unique(width):
        rows = width == w
        alpha = alphas[rows][:, None]
        i = np.arange(int(alpha.max()) + 1, dtype=float)[None, :]
        with np.errstate(invalid="ignore"):
            log_terms = (log_comb(alpha, i) + i * math.log(q)
                         + (alpha - i) * math.log(1 - q) + (i * i - i) / (2 * sigma ** 2))
        out[rows] = special.logsumexp(np.where(i <= alpha, log_terms, -np.inf), axis=1)
    return out


def log_a_fracs(q: float, sigma: float, alphas: Sequence[float]) -> np.ndarray:
    """log A_alpha at each fractional order of ``alphas`` (Mironov et al. 2019, Sec. 3.3,
    Eqs. (4)-(5)), the orders' series as the rows of one array: each row stops at its own
    first term below -30, as dp_accounting's loop for that order, and the rows that have not
    stopped within n terms are evaluated again with 4n."""
    alphas = np.asarray(alphas, dtype=float)
    out = np.empty(len(alphas))
    pending = np.arange(len(alphas))
    n = 64
    while len(pending):
        log_s0, log_s1, signs, stop = _frac_terms(q, sigma, alphas[pending], n)
        kept = np.arange(n)[None, :] < stop[:, None]
        a0 = _signed_logsumexp_rows(log_s0, signs, kept)
        a1 = _signed_logsumexp_rows(log_s1, signs, kept)
        done = stop > 0
        summed = done & ~np.isnan(a0) & ~np.isnan(a1)
        out[pending[summed]] = np.logaddexp(a0[summed], a1[summed])
        for k in pending[done & ~summed]:
            # cancellation below float64: dp_accounting's own loop
            out[k] = rdp_privacy_accountant._compute_log_a_frac(q, sigma, alphas[k])
        pending = pending[~done]
        n *= 4
    return out


def _frac_terms(q: float, sigma: float, alphas: np.ndarray, n: int):
    """The first n terms of Eqs. (4)-(5) of Mironov et al. (2019) for each order (a row):
    their logs in the two series, the binomial coefficients' signs, and how many terms each
    row sums (through its first term below -30; 0 when none of the n is)."""
    alpha = alphas[:, None]
    z0 = sigma ** 2 * math.log(1 / q - 1) + 0.5
    i = np.arange(n, dtype=float)[None, :]
    coef = special.binom(alpha, i)
    with np.errstate(divide="ignore"):
        log_coef = np.log(np.abs(coef))
    j = alpha - i
    log_t0 = log_coef + i * math.log(q) + j * math.log(1 - q)
    log_t1 = log_coef + j * math.log(q) + i * math.log(1 - q)
    log_e0 = math.log(0.5) + _log_erfc((i - z0) / (math.sqrt(2) * sigma))    # one row
    log_e1 = math.log(0.5) + _log_erfc((z0 - j) / (math.sqrt(2) * sigma))
    log_s0 = log_t0 + (i * i - i) / (2 * sigma ** 2) + log_e0
    log_s1 = log_t1 + (j * j - j) / (2 * sigma ** 2) + log_e1
    small = np.maximum(log_s0, log_s1) < _STOP
    stop = np.where(small.any(axis=1), np.argmax(small, axis=1) + 1, 0)
    return log_s0, log_s1, np.where(coef > 0, 1.0, -1.0), stop


def poisson_gaussian_rdp(q: float, sigma: float, orders: Sequence[float]) -> np.ndarray:
    """RDP at each order of one Poisson-subsampled Gaussian release (rate q, noise
    multiplier sigma = noise std / sensitivity), the cases as dp_accounting's
    ``_compute_rdp_poisson_subsampled_gaussian``: 0 at q = 0, inf without noise,
    alpha / (2 sigma^2) at q = 1 (the Gaussian mechanism), else log(A_alpha) / (alpha - 1)."""
    out = np.empty(len(orders))
    integer, fractional = [], []
    for k, alpha in enumerate(orders):
        if q == 0:
            out[k] = 0.0
        elif math.isinf(alpha) or sigma == 0:
            out[k] = math.inf
        elif q == 1.0:
            out[k] = alpha / (2 * sigma ** 2)
        else:
            (integer if float(alpha).is_integer() else fractional).append(k)
    for rows, log_a in ((integer, log_a_ints), (fractional, log_a_fracs)):
        if rows:
            alphas = np.asarray([orders[k] for k in rows], dtype=float)
            out[rows] = log_a(q, sigma, alphas) / (alphas - 1)
    return out
