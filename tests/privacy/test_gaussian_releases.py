"""Gaussian releases without amplification (the server's view), Lemma 1's range, and the
empty round's event, each against an independent computation (``independent_pld``,
``independent_rdp``)."""
import math

import pytest

from tff_idp.privacy import accounting, mspafl
from tff_idp.privacy.gaussian_releases import (composed_gaussian_epsilon, exact_gaussian_delta,
                                               exact_gaussian_epsilon)

from . import independent_pld as pld
from . import independent_rdp as rdp

DIGITS_DELTA = 500 ** -1.1          # the default run's delta


@pytest.mark.parametrize("participations,expected", [(1, 0.672), (10, 2.689)])
def test_server_epsilon_of_the_default_dp_fedavg_client(participations, expected):
    """DESIGN 4b: sigma^2 = 12.7, one and ten participations: 0.67 and 2.69 (exact)."""
    z = math.sqrt(12.7 / participations)          # k releases at z compose to z / sqrt(k)
    independent = pld.epsilon([(1.0, 1.0)], [(1.0, 0.0)], 1, DIGITS_DELTA, z)
    assert independent == pytest.approx(expected, abs=2e-3)
    precision = participations / 12.7
    assert composed_gaussian_epsilon(precision, DIGITS_DELTA, "pld") == pytest.approx(
        expected, rel=5e-3)
    assert exact_gaussian_epsilon(math.sqrt(precision), DIGITS_DELTA) == pytest.approx(
        expected, abs=1e-3)


@pytest.mark.parametrize("accountant,convert", [("rdp", rdp.epsilon),
                                                ("rdp_basic", rdp.basic_epsilon)])
@pytest.mark.parametrize("sigmas", [(12.7 ** 0.5,) * 4, (1.3, 2.0, 0.9)])
def test_composition_by_rdp_matches_the_independent_closed_form(accountant, convert, sigmas):
    """Rounds at different sigmas compose through sum 1/sigma^2: the independent RDP of the
    same releases (q = 1: the plain Gaussian, composed round by round) agrees within 1% and
    is never below (its orders are a subset of ours)."""
    ours = composed_gaussian_epsilon(sum(1 / s ** 2 for s in sigmas), DIGITS_DELTA, accountant)
    theirs = convert(lambda a: sum(rdp.observed_gaussian_rdp(1.0, s, a) for s in sigmas), 1,
                     DIGITS_DELTA)
    assert ours <= theirs * (1 + 1e-9) and ours == pytest.approx(theirs, rel=0.01)


def test_no_release_and_an_unnoised_release():
    assert composed_gaussian_epsilon(0.0, 1e-5) == 0.0
    assert composed_gaussian_epsilon(math.inf, 1e-5) == math.inf
    with pytest.raises(ValueError):
        composed_gaussian_epsilon(-1.0, 1e-5)


def test_exact_delta_is_the_hockey_stick_divergence():
    """Balle & Wang's closed form against the independent numerical PLD at two points."""
    for eps, z in ((0.5, 1.0), (2.0, 0.6)):
        assert exact_gaussian_delta(eps, 1 / z) == pytest.approx(
            pld.delta([(1.0, 1.0)], [(1.0, 0.0)], 1, eps, z), rel=0.01)


def test_lemma1_holds_up_to_its_range_and_not_beyond():
    """Issue 33 item 4: at delta_l = 1e-4 Lemma 1's sigma is exact up to eps_l 7.99; at
    eps_l = 10 the true delta is 2.7e-4 (independent PLD), and the calibration refuses it."""
    assert mspafl.lemma1_max_epsilon(1e-4) == pytest.approx(7.991, abs=2e-3)
    mu = 10 / math.sqrt(2 * math.log(1.25 / 1e-4))
    assert pld.delta([(1.0, 1.0)], [(1.0, 0.0)], 1, 10.0, 1 / mu) == pytest.approx(
        2.74e-4, rel=0.02)
    assert mspafl.lemma1_delta(10.0, 1e-4) == pytest.approx(2.74e-4, rel=0.01)
    assert mspafl.lemma1_delta(1.0, 1e-4) < 1e-4
    with pytest.raises(ValueError, match="Lemma 1's sigma is not"):
        mspafl.local_noise_std(10.0, 1e-4, 1.0)
    assert mspafl.local_noise_std(7.9, 1e-4, 1.0) > 0


def test_an_unnoised_empty_round_breaks_the_claim_and_a_noised_one_does_not():
    """Issue 33 item 3: n = 50, q = 0.04, T = 100, delta 1e-5, one group. With the empty round
    an exact zero (its event's probability depends on the target), the independent PLD gives
    about 1.15 > the claimed 1.0; with every round noised (what the aggregators now do,
    tests/engine/test_empty_rounds.py) the mechanism is the sampled Gaussian the ledger
    accounts, and its epsilon is within the ledger's."""
    z = accounting.calibrate_noise_multiplier(1.0, 0.04, 100, 1e-5)
    claimed = accounting.epsilon(z, 0.04, 100, 1e-5)
    assert claimed == pytest.approx(1.0, abs=1e-6)
    leaky = _epsilon(0.04, 50, z)
    assert leaky > 1.1
    noised = _epsilon(0.04, None, z)
    assert noised <= claimed


def _epsilon(q, population, z):
    p, qq, p_atom, q_atom = pld.poisson_round(q, population)
    return pld.epsilon(p, qq, 100, 1e-5, z, p_atom, q_atom)


@pytest.mark.parametrize("precision", [0.08, 0.5, 2.0, 10.0])
def test_exact_server_accountant_is_the_pld_value_and_below_rdp(precision):
    """Issue 56 item 7: a composition of Gaussians without sampling is one Gaussian of
    mu = sqrt(sum 1/z^2); Balle & Wang's profile gives its exact epsilon, which dp-accounting's
    PLD approximates (within 0.5%), and RDP's conversion is 8-25% above it at these
    precisions (the default run's server column: 10-12%)."""
    from tff_idp.privacy.gaussian_releases import composed_gaussian_epsilon
    delta = 1.07e-3
    exact = composed_gaussian_epsilon(precision, delta, "exact")
    assert exact == pytest.approx(composed_gaussian_epsilon(precision, delta, "pld"), rel=5e-3)
    rdp = composed_gaussian_epsilon(precision, delta, "rdp")
    assert 1.05 < rdp / exact < 1.3
