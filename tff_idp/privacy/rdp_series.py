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
-30), summed here as arrays. A fractional order at a large rate (q = 0.6) takes ~15 ms there
and about 0.3 ms here; a SAMPLE calibration evaluates thousands of them. Equal to
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


def _signed_logsumexp(log_terms, signs):
    """log(sum_i sign_i exp(log_terms_i)), or None when the sum is not positive."""
    top = float(np.max(log_terms))
    if top == -math.inf:
        return -math.inf
    total = float(np.sum(signs * np.exp(log_terms - top)))
    return top + math.log(total) if total > 0 else None


def log_a_int(q: float, sigma: float, alpha: int) -> float:
    """log A_alpha for integer alpha (Mironov et al. 2019, Sec. 3.3)."""
    i = np.arange(alpha + 1, dtype=float)
    log_terms = (special.gammaln(alpha + 1) - special.gammaln(i + 1)
                 - special.gammaln(alpha - i + 1) + i * math.log(q)
                 + (alpha - i) * math.log(1 - q) + (i * i - i) / (2 * sigma ** 2))
    return float(special.logsumexp(log_terms))


def log_a_frac(q: float, sigma: float, alpha: float) -> float:
    """log A_alpha for fractional alpha (Mironov et al. 2019, Sec. 3.3, Eqs. (4)-(5)); the
    series is extended until a term's log falls below -30, as dp_accounting's loop."""
    z0 = sigma ** 2 * math.log(1 / q - 1) + 0.5
    n = 64
    while True:
        i = np.arange(n, dtype=float)
        coef = special.binom(alpha, i)
        with np.errstate(divide="ignore"):
            log_coef = np.log(np.abs(coef))
        j = alpha - i
        log_t0 = log_coef + i * math.log(q) + j * math.log(1 - q)
        log_t1 = log_coef + j * math.log(q) + i * math.log(1 - q)
        log_e0 = math.log(0.5) + _log_erfc((i - z0) / (math.sqrt(2) * sigma))
        log_e1 = math.log(0.5) + _log_erfc((z0 - j) / (math.sqrt(2) * sigma))
        log_s0 = log_t0 + (i * i - i) / (2 * sigma ** 2) + log_e0
        log_s1 = log_t1 + (j * j - j) / (2 * sigma ** 2) + log_e1
        small = np.maximum(log_s0, log_s1) < _STOP
        if small.any():
            stop = int(np.argmax(small)) + 1       # the first small term is summed too
            break
        n *= 4
    signs = np.where(coef[:stop] > 0, 1.0, -1.0)
    a0 = _signed_logsumexp(log_s0[:stop], signs)
    a1 = _signed_logsumexp(log_s1[:stop], signs)
    if a0 is None or a1 is None:     # cancellation below float64: dp_accounting's own loop
        return float(rdp_privacy_accountant._compute_log_a_frac(q, sigma, alpha))
    return float(np.logaddexp(a0, a1))


def poisson_gaussian_rdp(q: float, sigma: float, orders: Sequence[float]) -> np.ndarray:
    """RDP at each order of one Poisson-subsampled Gaussian release (rate q, noise
    multiplier sigma = noise std / sensitivity), the cases as dp_accounting's
    ``_compute_rdp_poisson_subsampled_gaussian``: 0 at q = 0, inf without noise,
    alpha / (2 sigma^2) at q = 1 (the Gaussian mechanism), else log(A_alpha) / (alpha - 1)."""
    out = np.empty(len(orders))
    for k, alpha in enumerate(orders):
        if q == 0:
            out[k] = 0.0
        elif math.isinf(alpha) or sigma == 0:
            out[k] = math.inf
        elif q == 1.0:
            out[k] = alpha / (2 * sigma ** 2)
        elif float(alpha).is_integer():
            out[k] = log_a_int(q, sigma, int(alpha)) / (alpha - 1)
        else:
            out[k] = log_a_frac(q, sigma, alpha) / (alpha - 1)
    return out
