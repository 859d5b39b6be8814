"""Epsilon and noise calibration for the sampled Gaussian mechanism, on dp_accounting.

One round of client-level DP-FedAvg (and of one GDPFed group) is a sampled Gaussian
mechanism: each client is included with probability ``q`` (Poisson) or the cohort is a
fixed-size sample without replacement, and the clipped sum gets Gaussian noise of standard
deviation ``noise_multiplier * clip``. ``rounds`` rounds compose. Mechanisms are described as
dp_accounting event trees (:func:`round_event`, :func:`training_event`); accountants only
read them.

Example::

    >>> round(calibrate_noise_multiplier(0.5, 0.02, 50, 6000 ** -1.1) ** 2, 2)
    2.25

(GDPFed, paper 003 Table 5 / paper 000 Table III: FMNIST DP-FedAvg sigma^2 = 2.26.)
"""
from __future__ import annotations

import math
from typing import Optional

import dp_accounting
from dp_accounting import pld, rdp

ACCOUNTANTS = ("rdp", "pld")
SAMPLINGS = ("poisson", "fixed")


def _check(name: str, value: float, low: float, high: float = math.inf, closed_low=False):
    ok = (value >= low if closed_low else value > low) and value <= high
    if not (isinstance(value, (int, float)) and ok):
        raise ValueError(f"{name}={value!r} is out of range")


def round_event(noise_multiplier: float, sampling_rate: float, sampling: str = "poisson",
                population: Optional[int] = None) -> dp_accounting.DpEvent:
    """The DP event of one round: a sampled Gaussian mechanism.

    ``sampling="poisson"``: each client independently with probability ``sampling_rate``.
    ``sampling="fixed"``: a cohort of ``round(sampling_rate * population)`` clients drawn
    without replacement (needs ``population``; accounted under replace-one neighbours).
    """
    gaussian = dp_accounting.GaussianDpEvent(noise_multiplier)
    if sampling_rate >= 1.0:
        return gaussian
    if sampling == "poisson":
        return dp_accounting.PoissonSampledDpEvent(sampling_rate, gaussian)
    if sampling == "fixed":
        if not population:
            raise ValueError("sampling='fixed' needs population (the group size)")
        cohort = max(1, round(sampling_rate * population))
        return dp_accounting.SampledWithoutReplacementDpEvent(population, cohort, gaussian)
    raise ValueError(f"sampling={sampling!r} is not one of {SAMPLINGS}")


def training_event(noise_multiplier: float, sampling_rate: float, rounds: int,
                   sampling: str = "poisson", population: Optional[int] = None):
    """``rounds`` self-composed rounds of :func:`round_event`."""
    return dp_accounting.SelfComposedDpEvent(
        round_event(noise_multiplier, sampling_rate, sampling, population), rounds)


# A subset of dp_accounting's default RDP orders (integers are closed-form, hence fast).
# Being a subset, the epsilon it gives is never below the default accountant's, so a rate or
# noise found with it is within budget for the ledger (which uses the default orders) too.
FAST_RDP_ORDERS = (1.1, 1.2, 1.3, 1.5, 1.8, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0,
                   10.0, 12.0, 14.0, 16.0, 20.0, 24.0, 28.0, 32.0, 40.0, 48.0, 63.0, 128.0,
                   256.0)


def make_accountant(accountant: str = "rdp", sampling: str = "poisson", orders=None):
    """A fresh dp_accounting accountant. Fixed-size sampling needs RDP with REPLACE_ONE.
    ``orders`` (RDP only) replaces dp_accounting's default 156 orders."""
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant={accountant!r} is not one of {ACCOUNTANTS}")
    if sampling == "fixed":
        if accountant != "rdp":
            raise ValueError("sampling='fixed' (without replacement) is only supported by "
                             "accountant='rdp'")
        return rdp.RdpAccountant(
            orders, neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    if accountant == "rdp":
        return rdp.RdpAccountant(orders)
    return pld.PLDAccountant(value_discretization_interval=1e-3)


def epsilon_of_event(event, delta: float, accountant: str = "rdp",
                     sampling: str = "poisson", orders=None) -> float:
    acc = make_accountant(accountant, sampling, orders)
    acc.compose(event)
    return float(acc.get_epsilon(delta))


def epsilon(noise_multiplier: float, sampling_rate: float, rounds: int, delta: float,
            accountant: str = "rdp", sampling: str = "poisson",
            population: Optional[int] = None, orders=None) -> float:
    """Epsilon after ``rounds`` rounds of the sampled Gaussian mechanism at ``delta``
    (``orders``: RDP orders to use, see :data:`FAST_RDP_ORDERS`)."""
    _check("noise_multiplier", noise_multiplier, 0.0)
    _check("sampling_rate", sampling_rate, 0.0, 1.0)
    _check("delta", delta, 0.0, 1.0)
    if rounds <= 0:
        return 0.0
    event = training_event(noise_multiplier, sampling_rate, rounds, sampling, population)
    return epsilon_of_event(event, delta, accountant, sampling, orders)


def _opacus_style_search(target_epsilon, eps_of, tolerance):
    """Bisection that stops once the upper bracket is within ``tolerance`` of the target and
    returns the upper bracket (the search of Opacus' ``get_noise_multiplier``, which the
    GDPFed tables imply: it lands up to ~2% above the exact calibration)."""
    low, high, eps_high = 0.0, 10.0, math.inf
    while eps_high > target_epsilon:
        high *= 2.0
        eps_high = eps_of(high)
        if high > 1e6:
            raise ValueError(f"target_epsilon={target_epsilon} cannot be reached")
    while target_epsilon - eps_high > tolerance:
        mid = 0.5 * (low + high)
        eps_mid = eps_of(mid)
        if eps_mid < target_epsilon:
            high, eps_high = mid, eps_mid
        else:
            low = mid
    return high


def calibrate_noise_multiplier(target_epsilon: float, sampling_rate: float, rounds: int,
                               delta: float, accountant: str = "rdp",
                               tolerance: Optional[float] = None, sampling: str = "poisson",
                               population: Optional[int] = None) -> float:
    """Smallest noise multiplier whose epsilon after ``rounds`` rounds is <= target.

    ``tolerance=None``: exact inversion with ``dp_accounting.calibrate_dp_mechanism``.
    ``tolerance=0.01``: reproduces the search the GDPFed authors used (see
    :func:`_opacus_style_search`); the result is always within budget, just less tight.
    """
    _check("target_epsilon", target_epsilon, 0.0)
    _check("sampling_rate", sampling_rate, 0.0, 1.0)
    _check("delta", delta, 0.0, 1.0)
    if rounds <= 0:
        raise ValueError(f"rounds={rounds!r} must be positive")

    def eps_of(z):
        return epsilon(z, sampling_rate, rounds, delta, accountant, sampling, population)

    if tolerance is not None:
        _check("tolerance", tolerance, 0.0)
        return _opacus_style_search(target_epsilon, eps_of, tolerance)
    make_event = lambda z: training_event(z, sampling_rate, rounds, sampling, population)
    if accountant == "pld":
        # PLD is tighter than RDP, so the RDP calibration bounds it from above; a small
        # noise multiplier makes a huge PLD, so the bracket starts well away from zero.
        high = calibrate_noise_multiplier(target_epsilon, sampling_rate, rounds, delta, "rdp",
                                          sampling=sampling, population=population)
        bracket = dp_accounting.ExplicitBracketInterval(high / 4.0, high * 1.001)
    else:
        bracket = dp_accounting.ExplicitBracketInterval(1e-3, 1e4)
    return float(dp_accounting.calibrate_dp_mechanism(
        lambda: make_accountant(accountant, sampling), make_event, target_epsilon, delta,
        bracket_interval=bracket, discrete=False, tol=1e-6))


def default_delta(num_clients: int) -> float:
    """delta = 1 / n^1.1 (GDPFed, paper 003 Appendix B.2, following [25, 38])."""
    return 1.0 / num_clients ** 1.1
