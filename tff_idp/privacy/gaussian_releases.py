"""Privacy of Gaussian releases seen without amplification: what the *server* learns.

The server draws the cohort, so sampling amplification does not hold against it. Under
secure aggregation with client-drawn noise (GDPFed Alg. 1 line 13), each round a client takes
part in is, to the server, a Gaussian mechanism on that client's clipped update: zero-out
neighbours (its update replaced by zero), sensitivity C, noise std z_t C with z_t its group's
noise multiplier of round t. Rounds it did not take part in release nothing of it. The
composition of Gaussian mechanisms with multipliers z_1..z_k is exactly one Gaussian
mechanism with

    1 / z^2 = sum_t 1 / z_t^2          (the "precision" of the client's releases)

(for RDP: alpha / (2 z_t^2) adds up; for the privacy-loss distribution: mu-GDP composes as
mu^2 = sum mu_t^2, Dong, Roth, Su 2022, Cor. 3.3). :func:`composed_gaussian_epsilon` turns a
precision into epsilon with the run's accountant; :func:`exact_gaussian_delta` is the exact
privacy profile of one Gaussian (Balle & Wang 2018, Thm. 8), used to check a calibration
formula's range (MS-PAFL's Lemma 1).

Example (the default digits run's DP-FedAvg, sigma^2 = 12.7, delta = 500^-1.1)::

    >>> round(composed_gaussian_epsilon(1 / 12.7, 500 ** -1.1, "pld"), 2)
    0.67

Nothing here imports TensorFlow.
"""
from __future__ import annotations

import math

import dp_accounting
import numpy as np
from scipy import optimize, special

from .accounting import RDP_ORDERS, _check, accountant_of, epsilon_from_rdp, make_accountant


def composed_gaussian_epsilon(precision: float, delta: float, accountant: str = "rdp") -> float:
    """Epsilon at ``delta`` of Gaussian releases of one client's update (sensitivity C)
    whose multipliers z_t satisfy sum_t 1/z_t^2 = ``precision`` (module docstring): 0 for
    no release, inf for an un-noised one. ``accountant``: as the run's (``"rdp"``,
    ``"rdp_basic"``: the Gaussian's RDP alpha * precision / 2 on dp-accounting's orders and
    that accountant's conversion; ``"pld"``: dp-accounting's PLD of one Gaussian; ``"exact"``:
    Balle & Wang's analytic profile of the one Gaussian with mu = sqrt(precision) that the
    composition is, :func:`exact_gaussian_epsilon`, which PLD approximates)."""
    _check("delta", delta, 0.0, 1.0)
    if isinstance(precision, bool) or not precision >= 0:
        raise ValueError(f"precision={precision!r} must be >= 0")
    if precision == 0:
        return 0.0
    if math.isinf(precision):
        return math.inf
    if accountant == "exact":
        return exact_gaussian_epsilon(math.sqrt(precision), delta)
    if not accountant_of(accountant).is_rdp:          # PLD: dp-accounting's of one Gaussian
        acc = make_accountant(accountant)
        acc.compose(dp_accounting.GaussianDpEvent(1.0 / math.sqrt(precision)))
        return float(acc.get_epsilon(delta))
    orders = np.asarray(RDP_ORDERS)
    return epsilon_from_rdp(orders, orders * precision / 2.0, delta, accountant)


def exact_gaussian_delta(epsilon: float, mu: float) -> float:
    """The smallest delta for which a Gaussian mechanism with sensitivity / noise std = mu
    is (epsilon, delta)-DP (Balle & Wang 2018, "Improving the Gaussian mechanism", Thm. 8):

        delta = Phi(-epsilon / mu + mu / 2) - e^epsilon Phi(-epsilon / mu - mu / 2)."""
    _check("mu", mu, 0.0)
    if not epsilon >= 0:
        raise ValueError(f"epsilon={epsilon!r} must be >= 0")
    a = special.log_ndtr(-epsilon / mu + mu / 2)
    b = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    return float(math.exp(a) * -math.expm1(b - a)) if b < a else 0.0


def exact_gaussian_epsilon(mu: float, delta: float) -> float:
    """The smallest epsilon with :func:`exact_gaussian_delta` <= ``delta`` (0 if already)."""
    _check("delta", delta, 0.0, 1.0)
    if exact_gaussian_delta(0.0, mu) <= delta:
        return 0.0
    high = 1.0
    while exact_gaussian_delta(high, mu) > delta:
        high *= 2
    return float(optimize.brentq(lambda e: exact_gaussian_delta(e, mu) - delta, 0.0, high,
                                 xtol=1e-12))
