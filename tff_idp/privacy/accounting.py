"""Epsilon and noise calibration for the sampled Gaussian mechanism, on dp_accounting.

One round of client-level DP-FedAvg (and of one GDPFed group) is a sampled Gaussian
mechanism: each client is included with probability ``q`` (Poisson) or the cohort is a
fixed-size sample without replacement, and the clipped sum gets Gaussian noise of standard
deviation ``noise_multiplier * clip``. ``rounds`` rounds compose. Mechanisms are described as
dp_accounting event trees (:func:`round_event`, :func:`training_event`); accountants only
read them.

Neighbouring relations (client level: two federations differ in one client's data):

- ``sampling="poisson"``: add/remove-one. Adding or removing a client moves the clipped sum
  by at most C, so the Gaussian's multiplier is noise std / C = ``noise_multiplier``.
- ``sampling="fixed"``: replace-one (a fixed-size cohort drawn without replacement cannot
  be analysed under add/remove: the population size would change). Replacing one client's
  data by another's moves the clipped sum by up to 2C, so the Gaussian inside dp-accounting's
  ``SampledWithoutReplacementDpEvent`` gets multiplier ``noise_multiplier / 2``.
- :func:`observed_sampled_gaussian_rdp`: a release the server sees per client (PFA's public
  rows), where the server knows who took part: zero-out neighbours (the client's update
  replaced by zero), sensitivity C, and no amplification beyond "absent rounds reveal
  nothing".

Example::

    >>> round(calibrate_noise_multiplier(0.5, 0.02, 50, 6000 ** -1.1) ** 2, 2)
    2.25

(GDPFed, paper 003 Table 5 / paper 000 Table III: FMNIST DP-FedAvg sigma^2 = 2.26.)
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Callable, Optional, Sequence

import dp_accounting
import numpy as np
from dp_accounting import pld, rdp
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import optimize

from . import rdp_series, rdp_wor

SAMPLINGS = ("poisson", "fixed")


def _check(name: str, value: float, low: float, high: float = math.inf, closed_low=False):
    """ValueError unless ``value`` is a real number (Python or numpy, not bool) in the range;
    NaN never is."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}={value!r} is not a number")
    value = float(value)
    ok = (value >= low if closed_low else value > low) and value <= high
    if not ok:
        raise ValueError(f"{name}={value!r} is out of range")


def round_event(noise_multiplier: float, sampling_rate: float, sampling: str = "poisson",
                population: Optional[int] = None) -> dp_accounting.DpEvent:
    """The DP event of one round: a sampled Gaussian mechanism.

    ``sampling="poisson"``: each client independently with probability ``sampling_rate``.
    ``sampling="fixed"``: a cohort of ``round(sampling_rate * population)`` clients drawn
    without replacement (needs ``population``), under replace-one neighbours: the sum's
    sensitivity is 2C, so the Gaussian's multiplier is ``noise_multiplier / 2`` (Wang, Balle,
    Kasiviswanathan 2019, whose bound dp-accounting implements, take the base mechanism's
    RDP under the replace relation). ``noise_multiplier`` is always noise std / C.
    """
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling={sampling!r} is not one of {SAMPLINGS}")
    if sampling == "fixed":
        if not population:
            raise ValueError("sampling='fixed' needs population (the group size)")
        gaussian = dp_accounting.GaussianDpEvent(noise_multiplier / 2.0)
        cohort = max(1, round(sampling_rate * population))
        if cohort >= population:
            return gaussian
        return dp_accounting.SampledWithoutReplacementDpEvent(population, cohort, gaussian)
    gaussian = dp_accounting.GaussianDpEvent(noise_multiplier)
    if sampling_rate >= 1.0:
        return gaussian
    return dp_accounting.PoissonSampledDpEvent(sampling_rate, gaussian)


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


# dp_accounting's default orders: what the ledger uses
RDP_ORDERS = tuple(float(o) for o in rdp_privacy_accountant.DEFAULT_RDP_ORDERS)


def basic_epsilon(orders: Sequence[float], rdp_values: Sequence[float],
                  delta: float) -> tuple:
    """(epsilon, optimal order) of an RDP curve by the basic conversion of Mironov (2017),
    Prop. 3, the one paper 003 states as Lemma 4:

        epsilon = min over alpha of rho(alpha) + log(1/delta) / (alpha - 1).

    Looser than dp-accounting's conversion (Canonne, Kamath, Steinke 2020, Prop. 12), which
    subtracts log(alpha) / (alpha - 1) - log(1 - 1/alpha); both are valid bounds."""
    _check("delta", delta, 0.0, 1.0)
    a = np.asarray(orders, dtype=float)
    r = np.asarray(rdp_values, dtype=float)
    if a.shape != r.shape or np.any(a < 1.0) or np.any(r < 0):
        raise ValueError("orders must be >= 1 and match the non-negative RDP values")
    with np.errstate(divide="ignore"):                  # alpha = 1 bounds nothing: inf
        eps = r + math.log(1.0 / delta) / (a - 1.0)
    i = int(np.argmin(eps))
    return float(eps[i]), float(a[i])


class RdpAccountant(rdp.RdpAccountant):
    """dp-accounting's RDP accountant, whose subsampled Gaussian releases get their RDP from
    array forms of dp-accounting's own bounds: Poisson sampling with add/remove neighbours
    from :func:`rdp_series.poisson_gaussian_rdp` (the same series, tens of times faster at
    large rates), fixed-size sampling without replacement with replace-one neighbours from
    :func:`rdp_wor.wor_gaussian_rdp` (the same Theorem 27 bound, one table of differences for
    every order instead of one per order), both equal to dp-accounting's up to float64
    rounding. Every other event, the composition and the conversion to
    (epsilon, delta) are dp-accounting's."""

    def _maybe_compose(self, event, count, do_compose):
        relation = self._neighboring_relation
        if (isinstance(event, dp_accounting.PoissonSampledDpEvent)
                and isinstance(event.event, dp_accounting.GaussianDpEvent)
                and relation is dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE):
            if do_compose:
                self._rdp += count * rdp_series.poisson_gaussian_rdp(
                    event.sampling_probability, event.event.noise_multiplier, self._orders)
            return None
        if (isinstance(event, dp_accounting.SampledWithoutReplacementDpEvent)
                and isinstance(event.event, dp_accounting.GaussianDpEvent)
                and relation is dp_accounting.NeighboringRelation.REPLACE_ONE):
            if do_compose:
                self._rdp += count * rdp_wor.wor_gaussian_rdp(
                    event.sample_size / event.source_dataset_size,
                    event.event.noise_multiplier, self._orders)
            return None
        return super()._maybe_compose(event, count, do_compose)


class BasicConversionRdpAccountant(RdpAccountant):
    """dp-accounting's RDP accountant (same RDP curve, same orders) whose epsilon is
    :func:`basic_epsilon`: ``accountant = "rdp_basic"``."""

    def get_epsilon_and_optimal_order(self, target_delta: float):
        return basic_epsilon(self._orders, self._rdp, target_delta)

    def get_epsilon(self, target_delta: float) -> float:
        return self.get_epsilon_and_optimal_order(target_delta)[0]


@dataclasses.dataclass(frozen=True)
class Accountant:
    """An accountant a config can name (``accountant``): ``rdp_class`` the dp-accounting RDP
    accountant it makes (None: PLD) and ``convert(orders, rdp, delta)`` how its RDP curve
    becomes epsilon at delta."""
    name: str
    rdp_class: Optional[type] = None
    convert: Optional[Callable] = None

    @property
    def is_rdp(self) -> bool:
        return self.rdp_class is not None

    def make(self, sampling: str = "poisson", orders=None):
        """A fresh dp_accounting accountant. Fixed-size sampling needs RDP with
        REPLACE_ONE. ``orders`` (RDP only) replaces dp_accounting's default 156 orders."""
        if sampling == "fixed":
            if not self.is_rdp:
                raise ValueError("sampling='fixed' (without replacement) is only supported "
                                 f"by the RDP accountants {RDP_ACCOUNTANTS}")
            return self.rdp_class(
                orders, neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
        if self.is_rdp:
            return self.rdp_class(orders)
        return pld.PLDAccountant(value_discretization_interval=1e-3)


def _dp_accounting_conversion(orders, rdp_values, delta) -> float:
    """dp-accounting's conversion (Canonne, Kamath, Steinke 2020, Prop. 12)."""
    return float(rdp_privacy_accountant.compute_epsilon(list(orders), list(rdp_values),
                                                        delta)[0])


def _basic_conversion(orders, rdp_values, delta) -> float:
    """Paper 003's Lemma 4 (Mironov 2017, Prop. 3): :func:`basic_epsilon`."""
    return basic_epsilon(orders, rdp_values, delta)[0]


# the accountants, by the name a config gives: the RDP ones share the RDP curve and differ
# in its conversion to (epsilon, delta)
ACCOUNTANT_REGISTRY = {a.name: a for a in (
    Accountant("rdp", RdpAccountant, _dp_accounting_conversion),
    Accountant("rdp_basic", BasicConversionRdpAccountant, _basic_conversion),
    Accountant("pld"))}
ACCOUNTANTS = tuple(ACCOUNTANT_REGISTRY)
RDP_ACCOUNTANTS = tuple(n for n, a in ACCOUNTANT_REGISTRY.items() if a.is_rdp)
# of the server-side epsilon, a composition of Gaussians without sampling (privacy.ledger)
SERVER_ACCOUNTANTS = ACCOUNTANTS + ("exact",)


def accountant_of(name: str) -> Accountant:
    """The registered accountant ``name`` (ValueError, one line, for another)."""
    if name not in ACCOUNTANT_REGISTRY:
        raise ValueError(f"accountant={name!r} is not one of {ACCOUNTANTS}")
    return ACCOUNTANT_REGISTRY[name]


def make_accountant(accountant: str = "rdp", sampling: str = "poisson", orders=None):
    """A fresh dp_accounting accountant of the registered kind ``accountant``
    (:data:`ACCOUNTANT_REGISTRY`: ``"rdp"``, dp-accounting's RDP accountant and conversion;
    ``"rdp_basic"``, the same RDP with :func:`basic_epsilon`'s conversion; ``"pld"``)."""
    return accountant_of(accountant).make(sampling, orders)


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

    ``tolerance=None``: exact inversion (relative 1e-7; PLD through
    ``dp_accounting.calibrate_dp_mechanism``).
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
    if not accountant_of(accountant).is_rdp:
        # PLD is tighter than RDP, so the RDP calibration bounds it from above; a small
        # noise multiplier makes a huge PLD, so the bracket starts well away from zero.
        high = calibrate_noise_multiplier(target_epsilon, sampling_rate, rounds, delta, "rdp",
                                          sampling=sampling, population=population)
        make_event = lambda z: training_event(z, sampling_rate, rounds, sampling, population)
        return float(dp_accounting.calibrate_dp_mechanism(
            lambda: make_accountant(accountant, sampling), make_event, target_epsilon, delta,
            bracket_interval=dp_accounting.ExplicitBracketInterval(high / 4.0, high * 1.001),
            discrete=False, tol=1e-6))
    # RDP: the root on the fast orders (a subset: an upper bound of epsilon, so a feasible
    # noise), then on the default orders near the optimal one, then a check on all of them
    fast = lambda z: epsilon(z, sampling_rate, rounds, delta, accountant, sampling,
                             population, orders=FAST_RDP_ORDERS)
    high = invert_decreasing(fast, target_epsilon, rtol=1e-4)
    window = order_window(high, sampling_rate, rounds, delta, sampling, population,
                          accountant=accountant)
    near = lambda z: epsilon(z, sampling_rate, rounds, delta, accountant, sampling,
                             population, orders=window)
    z = invert_decreasing(near, target_epsilon, high=high)
    if eps_of(z) < target_epsilon * (1 - 1e-6):     # the optimum lay outside the window
        z = invert_decreasing(eps_of, target_epsilon, high=z)
    return z


def order_window(noise_multiplier: float, sampling_rate: float, rounds: int, delta: float,
                 sampling: str = "poisson", population: Optional[int] = None,
                 width: int = 2, accountant: str = "rdp") -> tuple:
    """The default RDP orders (:data:`RDP_ORDERS`) within ``width`` fast orders of the fast
    orders' optimal one. Epsilon over the RDP orders is a minimum over a curve with one
    valley, so the optimum over all orders lies there; a search near the answer evaluates
    these ~20 orders instead of 156 and checks the result on all of them."""
    acc = make_accountant(accountant, sampling, FAST_RDP_ORDERS)
    acc.compose(training_event(noise_multiplier, sampling_rate, rounds, sampling, population))
    _, best = acc.get_epsilon_and_optimal_order(delta)
    i = FAST_RDP_ORDERS.index(best)
    lo = FAST_RDP_ORDERS[i - width] if i - width >= 0 else 0.0
    hi = FAST_RDP_ORDERS[i + width] if i + width < len(FAST_RDP_ORDERS) else math.inf
    return tuple(o for o in RDP_ORDERS if lo <= o <= hi)


def invert_decreasing(eps_of, target: float, high: Optional[float] = None,
                      rtol: float = 1e-7) -> float:
    """The smallest x with eps_of(x) <= target, for eps_of decreasing in x (a noise
    multiplier): Brent's method on a bracket, then nudged up until feasible, so the result
    is never over budget. ``high``: a known feasible x (the bracket is then found below it,
    near the answer); else the bracket is grown from 1."""
    if high is not None:
        low = high
        while True:
            low *= 0.97
            if eps_of(low) > target:
                break
            high = low
            if low < 1e-6:
                raise ValueError(f"target_epsilon={target} is met without noise")
    else:
        low, high = _feasible_bracket(target, eps_of)
    x = float(optimize.brentq(lambda v: eps_of(v) - target, low, high, xtol=1e-12, rtol=rtol))
    while eps_of(x) > target:
        x *= 1.0 + rtol
    return x


def _feasible_bracket(target_epsilon: float, eps_of, start: float = 1.0):
    """(low, high) with eps_of(low) > target >= eps_of(high), grown by doubling from
    ``start``. The bracket never reaches far beyond the answer: at a huge noise multiplier
    and a tiny rate the RDP series underflows (dp-accounting can return a slightly negative
    RDP there, which it then refuses), so a fixed (1e-3, 1e4) bracket fails for q < ~1e-3."""
    high = start
    while eps_of(high) > target_epsilon:
        high *= 2.0
        if high > 1e7:
            raise ValueError(f"target_epsilon={target_epsilon} cannot be reached")
    low = high
    while True:
        low /= 2.0
        if low < 1e-6:
            raise ValueError(f"target_epsilon={target_epsilon} is met without noise")
        if eps_of(low) > target_epsilon:
            return low, high


def default_delta(num_clients: int) -> float:
    """delta = 1 / n^1.1 (GDPFed, paper 003 Appendix B.2, following [25, 38])."""
    return 1.0 / num_clients ** 1.1


def observed_sampled_gaussian_rdp(noise_multiplier: float, sampling_rate: float,
                                  orders: Sequence[float]) -> np.ndarray:
    """RDP, per order alpha, of one round of a release the server sees per client: with
    probability q the client takes part and its clipped update (sensitivity C, zero-out
    neighbours) is released with N(0, (noise_multiplier C)^2) noise; otherwise nothing of it
    is released, and the server knows which happened.

    The pair (participation, output) is a mixture whose selector is observed, so the Renyi
    divergence is exact:

        D_alpha = log(1 - q + q exp((alpha - 1) alpha / (2 z^2))) / (alpha - 1)

    (Mironov 2017, Prop. 7 for the Gaussian's alpha / (2 z^2); the observed selector splits
    the integral into the absent part, ratio 1, and the Gaussian part). It is never below the
    Poisson-amplified RDP (the server learns who took part) and equals the plain Gaussian's at
    q = 1."""
    _check("noise_multiplier", noise_multiplier, 0.0)
    _check("sampling_rate", sampling_rate, 0.0, 1.0)
    a = np.asarray(orders, dtype=float)
    gauss = a / (2.0 * float(noise_multiplier) ** 2)
    q = float(sampling_rate)
    # log(1 - q + q e^x) computed stably for large x = (alpha - 1) gauss
    x = (a - 1.0) * gauss
    return np.logaddexp(math.log1p(-q) if q < 1 else -np.inf, math.log(q) + x) / (a - 1.0)


def epsilon_from_rdp(orders: Sequence[float], rdp_values: Sequence[float],
                     delta: float, accountant: str = "rdp") -> float:
    """Epsilon at ``delta`` of a composed RDP curve (``"rdp"``: dp-accounting's conversion,
    Canonne, Kamath, Steinke 2020, Prop. 12; ``"rdp_basic"``: :func:`basic_epsilon`): the
    registered accountant's conversion; a curve handed in under ``"pld"``, an accountant
    without one, is converted as dp-accounting does)."""
    convert = accountant_of(accountant).convert or _dp_accounting_conversion
    return convert(orders, rdp_values, delta)



def observed_epsilon(noise_multiplier: float, sampling_rate: float, rounds: int,
                     delta: float) -> float:
    """Epsilon after ``rounds`` rounds of :func:`observed_sampled_gaussian_rdp`."""
    if rounds <= 0:
        return 0.0
    rdp_values = rounds * observed_sampled_gaussian_rdp(noise_multiplier, sampling_rate,
                                                        RDP_ORDERS)
    return epsilon_from_rdp(RDP_ORDERS, rdp_values, delta)


def calibrate_observed_noise_multiplier(target_epsilon: float, sampling_rate: float,
                                        rounds: int, delta: float) -> float:
    """Smallest noise multiplier whose :func:`observed_epsilon` is <= target."""
    _check("target_epsilon", target_epsilon, 0.0)
    return invert_decreasing(lambda z: observed_epsilon(z, sampling_rate, rounds, delta),
                             target_epsilon)
