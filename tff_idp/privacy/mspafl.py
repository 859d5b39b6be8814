"""MS-PAFL's privacy bounds (paper 002: Li, Wang, Tian, Wang, Su, "Federated Learning with
Enhanced Privacy via Model Splitting and Random Client Participation"), as printed, and an
RDP cross-check of the same per-client mechanism.

The mechanism: in a round a client checks in with probability p (eq. 10), trains on a
subsample of Qb of its |D_i| examples (without replacement, "wor", or with, "wr"; eq. 9),
clips the *public part of its model* to C (eq. 11) and adds its own N(0, sigma^2) noise per
public coordinate (eq. 12: local DP, the client draws the full sigma). Neighbouring relation:
replace one record of one client's data; who draws the noise: the client.

The paper's chain (closed forms, no RDP): Lemma 1 (the Gaussian mechanism's sigma for
(eps_l, delta_l)), Theorem 1 (subsampling: (2 q eps_l, q delta_l)), Corollary 1 (check-in
amplification of a round, via a Hoeffding conditioning with delta' = 2 exp(-2 beta^2 N)),
Theorem 4 (strong composition of the rounds, the global model's guarantee) and Theorem 3 (a
moments-accountant closed form for one client over T rounds). These functions compute them as
printed, each citing its equation. Where the paper's reasoning is questionable the docstring
says so; in particular Theorem 3's constant (from the paper's (C.2)) gives values *below* the
RDP accounting of the same mechanism (:func:`rdp_client_epsilon`), so it is reported as "the
paper's formula", not as a guarantee.

Nothing here imports TensorFlow.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple, Union

import dp_accounting
import numpy as np
from scipy import optimize

from .accounting import RdpAccountant, _check
from .gaussian_releases import exact_gaussian_delta

Rates = Union[float, Sequence[float]]
DATA_SAMPLINGS = ("wor", "wr")


def lemma1_delta(eps_l: float, delta_l: float) -> float:
    """The exact delta at ``eps_l`` of the Gaussian mechanism that Lemma 1 calibrates for
    (eps_l, delta_l): its sensitivity / noise ratio is mu = eps_l / sqrt(2 ln(1.25 /
    delta_l)) whatever the sensitivity, and Balle & Wang's exact profile
    (:func:`tff_idp.privacy.gaussian_releases.exact_gaussian_delta`) gives the delta.
    Dwork & Roth's Thm 3.22 proves Lemma 1 for eps_l < 1 only; at delta_l = 1e-4 it still
    holds up to eps_l = 7.99 and fails above (eps_l = 10: 2.7e-4)."""
    _check("eps_l", eps_l, 0.0)
    _check("delta_l", delta_l, 0.0, 1.0)
    return exact_gaussian_delta(eps_l, eps_l / math.sqrt(2.0 * math.log(1.25 / delta_l)))


def lemma1_max_epsilon(delta_l: float) -> float:
    """The largest eps_l for which Lemma 1's sigma gives (eps_l, delta_l)-DP
    (:func:`lemma1_delta` <= delta_l; it holds on (0, 1] by Dwork & Roth Thm 3.22 and
    breaks once, here found by bisection)."""
    _check("delta_l", delta_l, 0.0, 1.0)
    low, high = 1.0, 2.0
    while lemma1_delta(high, delta_l) <= delta_l:
        low, high = high, 2 * high
    return float(optimize.brentq(lambda e: lemma1_delta(e, delta_l) - delta_l, low, high,
                                 xtol=1e-9))


def local_noise_std(eps_l: float, delta_l: float, clip: float,
                    sensitivity_factor: float = 2.0) -> float:
    """sigma = s sqrt(2 ln(1.25 / delta_l)) / eps_l (002 Lemma 1, eq. 6; Dwork & Roth Thm
    3.22) with l2 sensitivity s = ``sensitivity_factor`` x C. The clipped public model of a
    client lies in a ball of radius C, so two of its values differ by at most 2C (002 eq. C.3):
    s = 2C is the default (the paper never states the s of its experiments; a [GUESS] of the
    project's notes). C = 1, delta_l = 1e-4, eps_l = 1: sigma = 8.687."""
    _check("eps_l", eps_l, 0.0)
    _check("delta_l", delta_l, 0.0, 1.0)
    _check("clip", clip, 0.0)
    _check("sensitivity_factor", sensitivity_factor, 0.0)
    if delta_l >= 1.0:
        raise ValueError(f"delta_l={delta_l!r} is out of range")
    if lemma1_delta(eps_l, delta_l) > delta_l:
        raise ValueError(f"eps_l={eps_l!r}: Lemma 1's sigma is not (eps_l, delta_l)-DP above "
                         f"eps_l = {lemma1_max_epsilon(delta_l):.3g} at delta_l={delta_l:g} "
                         f"(its exact delta here is {lemma1_delta(eps_l, delta_l):.2g})")
    return sensitivity_factor * clip * math.sqrt(2.0 * math.log(1.25 / delta_l)) / eps_l


def subsample_rate(num_examples: int, steps: int, batch: int, mode: str = "wor") -> float:
    """q_i, the probability that a given record is used in a round of ``steps`` batches of
    ``batch`` (002 eq. 9): "wor" (a random subset of Qb distinct records) q = Qb / |D_i|;
    "wr" (Qb independent uniform draws) q = 1 - (1 - 1/|D_i|)^{Qb}. Qb > |D_i| under "wor"
    is refused (there are not that many distinct records)."""
    if mode not in DATA_SAMPLINGS:
        raise ValueError(f"data_sampling={mode!r} is not one of {DATA_SAMPLINGS}")
    for name, v in (("num_examples", num_examples), ("steps", steps), ("batch", batch)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name}={v!r} must be a positive integer")
    draws = steps * batch
    if mode == "wor":
        if draws > num_examples:
            raise ValueError(f"local_steps x batch_size = {draws} > {num_examples} examples: "
                             "no subset of that many distinct records (use 'wr')")
        return draws / num_examples
    return 1.0 - (1.0 - 1.0 / num_examples) ** draws


def hoeffding_delta(num_clients: int, beta: float = 0.25) -> float:
    """delta' = 2 exp(-2 beta^2 N) (002 Theorem 2): the probability the check-in count
    strays from its mean by beta N or more. N = 100, beta = 0.25: 7.4533e-6."""
    if int(num_clients) != num_clients or num_clients < 1:
        raise ValueError(f"num_clients={num_clients!r} must be a positive integer")
    _check("beta", beta, 0.0)
    return 2.0 * math.exp(-2.0 * beta * beta * num_clients)


def checkin_normaliser(p: Rates, num_clients: Optional[int] = None) -> float:
    """nu = 1 - prod_i (1 - p_i) (002 eq. 13), the probability that anyone checks in; a
    single p is every client's (then ``num_clients`` is needed). N = 100, p = 0.1:
    0.99997344."""
    ps = _rates(p, "p", num_clients)
    return float(1.0 - np.prod(1.0 - ps))


def _rates(value: Rates, name: str, n: Optional[int] = None) -> np.ndarray:
    values = np.atleast_1d(np.asarray(value, dtype=float))
    for v in values:
        _check(name, float(v), 0.0, 1.0)
    if values.size == 1 and n is not None:
        return np.full(int(n), values[0])
    return values


def _pairs(p: Rates, q: Rates) -> Tuple[np.ndarray, np.ndarray]:
    ps, qs = _rates(p, "p"), _rates(q, "q")
    if ps.size != qs.size and min(ps.size, qs.size) != 1:
        raise ValueError(f"p and q: {ps.size} and {qs.size} values; give one each or lists "
                         "of equal length")
    return np.broadcast_arrays(ps, qs)


def round_epsilon(p: Rates, q: Rates, eps_l: float, num_clients: int,
                  beta: float = 0.25) -> float:
    """epsilon_c^t of one round for the global public model: Corollary 1 (002 eq. 16a),
    ln[1 + p/(1 - delta') (exp(2 q eps_l) - 1)]; with lists (per-client p_i, q_i) Theorem 2
    (eq. 15a), the max over clients. The exponent 2 q eps_l is Theorem 1's subsampled
    epsilon (eq. 9), which the paper states for eps_l <= 1. p = 0.5, q = 0.2, eps_l = 1,
    N = 100: 0.21987."""
    _check("eps_l", eps_l, 0.0)
    d = hoeffding_delta(num_clients, beta)
    ps, qs = _pairs(p, q)
    return float(np.max(np.log1p(ps / (1.0 - d) * np.expm1(2.0 * qs * eps_l))))


def round_delta(p: Rates, q: Rates, delta_l: float, num_clients: int,
                beta: float = 0.25) -> float:
    """delta_c^t of one round: delta' + p q delta_l / (1 - delta') (002 eq. 16b); with lists
    the max over clients (eq. 15b)."""
    _check("delta_l", delta_l, 0.0, 1.0)
    d = hoeffding_delta(num_clients, beta)
    ps, qs = _pairs(p, q)
    return float(np.max(d + ps * qs * delta_l / (1.0 - d)))


def theorem3_constant(delta_l: float, clip: float) -> float:
    """c0 of 002 Theorem 3 (eq. 18), from the proof's (C.8):
    sqrt(ln(1/delta_l) / ln(1.25/delta_l)) / (2C). C = 1, delta_l = 1e-4: 0.49405."""
    _check("delta_l", delta_l, 0.0, 1.0)
    _check("clip", clip, 0.0)
    return math.sqrt(math.log(1.0 / delta_l) / math.log(1.25 / delta_l)) / (2.0 * clip)


def client_epsilon(q: float, eps_l: float, p: float, rounds: int, delta_l: float,
                   clip: float) -> float:
    """epsilon_i^T of one client after T rounds: c0 q eps_l sqrt(p T / (1 - q)) (002
    Theorem 3, eq. 18, with c0 from (C.8), :func:`theorem3_constant`); its delta is delta_l.
    The paper's formula, not a guarantee: its per-round moment (C.2) has 4 s^2 where Abadi
    et al.'s Lemma 3 gives 2, and the result lies below the RDP value of the same mechanism
    (q = 0.2, eps_l = 1, 100 participations: 1.105 against 3.958 by RDP without replacement,
    :func:`rdp_client_epsilon`). Diverges at q = 1 (no subsampling)."""
    _check("q", q, 0.0, 1.0)
    if q >= 1.0:
        raise ValueError("q=1: Theorem 3 divides by 1 - q (no subsampling, no bound)")
    _check("eps_l", eps_l, 0.0)
    _check("p", p, 0.0, 1.0)
    if int(rounds) != rounds or rounds < 1:
        raise ValueError(f"rounds={rounds!r} must be a positive integer")
    return theorem3_constant(delta_l, clip) * q * eps_l * math.sqrt(p * rounds / (1.0 - q))


def global_epsilon(eps_round: float, delta_round: float, rounds: int,
                   delta_tilde: float) -> Tuple[float, float]:
    """(epsilon, delta) of the global model after T rounds by Dwork-Rothblum-Vadhan strong
    composition (002 Theorem 4, eq. 19a): sqrt(2 T ln(1/delta~)) eps' + T eps' (e^{eps'} - 1),
    with total delta T delta' + delta~ (eq. 19b), returned rather than hidden: with
    p = 0.5, q = 0.2, N = 100 it is 2.75e-4 at T = 10 and 1.85e-3 at T = 100, above the
    paper's delta = 1e-4."""
    _check("eps_round", eps_round, 0.0, closed_low=True)
    _check("delta_round", delta_round, 0.0, 1.0, closed_low=True)
    _check("delta_tilde", delta_tilde, 0.0, 1.0)
    if int(rounds) != rounds or rounds < 1:
        raise ValueError(f"rounds={rounds!r} must be a positive integer")
    eps = (math.sqrt(2.0 * rounds * math.log(1.0 / delta_tilde)) * eps_round
           + rounds * eps_round * math.expm1(eps_round))
    return eps, rounds * delta_round + delta_tilde


def baseline_client_epsilon(eps_l: float, rounds: int, delta_l: float, clip: float) -> float:
    """The no-amplification baseline of 002 Fig. 5 ("DP-FedAvg"): Theorem 3's derivation
    without sampling (q = 1 and p = 1 in (C.2)-(C.8) with the 1/(1 - q) factor dropped):
    c0 eps_l sqrt(T) (a [GUESS] of the project's notes; (18) itself diverges at q = 1)."""
    _check("eps_l", eps_l, 0.0)
    return theorem3_constant(delta_l, clip) * eps_l * math.sqrt(rounds)


WR_NO_ACCOUNTANT = ("with-replacement subsampling: dp-accounting has no accountant for a "
                    "fixed-size sample drawn with replacement (SampledWithReplacementDpEvent "
                    "is unsupported by its RDP and PLD accountants); no RDP value is given")


def rdp_client_epsilon(sigma: float, clip: float, participations: int, delta: float,
                       mode: str = "wor", num_examples: Optional[int] = None,
                       sample_size: Optional[int] = None,
                       rate: Optional[float] = None) -> Optional[float]:
    """An independent RDP value for one client's record-level privacy after
    ``participations`` rounds (the suite's RDP accountant, :class:`accounting.RdpAccountant`:
    dp-accounting's, its subsampled Gaussians evaluated as arrays), composing only the rounds it
    took part in (check-in is data-independent). Per round the client releases its clipped
    public model plus N(0, sigma^2): two subsamples give means at most 2C apart, so the base
    Gaussian's multiplier is z = sigma / (2C) under replace-one neighbours.

    ``mode="wor"``: a fixed-size subsample of ``sample_size`` of ``num_examples`` without
    replacement, replace-one (Wang, Balle, Kasiviswanathan 2019); ``"poisson"``: each record
    with probability ``rate``, add/remove-one (a record more or less can still move the
    clipped model anywhere in its ball, so the sensitivity stays 2C); ``"wr"``: None
    (:data:`WR_NO_ACCOUNTANT`)."""
    _check("sigma", sigma, 0.0)
    _check("clip", clip, 0.0)
    _check("delta", delta, 0.0, 1.0)
    if mode == "wr":
        return None
    z = sigma / (2.0 * clip)
    if mode == "wor":
        if not num_examples or not sample_size or sample_size > num_examples:
            raise ValueError("mode='wor' needs sample_size <= num_examples")
        base = dp_accounting.GaussianDpEvent(z)
        event = (base if sample_size == num_examples else
                 dp_accounting.SampledWithoutReplacementDpEvent(num_examples, sample_size, base))
        acc = RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    elif mode == "poisson":
        _check("rate", rate, 0.0, 1.0)
        base = dp_accounting.GaussianDpEvent(z)
        event = base if rate >= 1.0 else dp_accounting.PoissonSampledDpEvent(rate, base)
        acc = RdpAccountant()
    else:
        raise ValueError(f"mode={mode!r} is not 'wor', 'poisson' or 'wr'")
    if participations == 0:
        return 0.0
    acc.compose(dp_accounting.SelfComposedDpEvent(event, int(participations)))
    return float(acc.get_epsilon(delta))


def checkin_rdp_epsilon(p: float, sigma: float, clip: float, rounds: int,
                        delta: float) -> float:
    """A standard client-level reading of the check-in, for comparison only: independent
    Bernoulli(p) check-in is Poisson subsampling of clients, and the sum of clipped public
    models has add/remove sensitivity C with at least the client's own N(0, sigma^2) on it,
    so z = sigma / C (002 notes §2.6; dividing by the realised count, eq. 13, releases the
    count, which this does not cover). p = 0.5, sigma = 8.687, delta = 1e-4: T = 100 gives
    2.24."""
    _check("p", p, 0.0, 1.0)
    z = sigma / clip
    base = dp_accounting.GaussianDpEvent(z)
    event = base if p >= 1.0 else dp_accounting.PoissonSampledDpEvent(p, base)
    acc = RdpAccountant()
    acc.compose(dp_accounting.SelfComposedDpEvent(event, int(rounds)))
    return float(acc.get_epsilon(delta))
