"""Paper 001's noise at its setting (every client every round, q = 1, delta = 1e-5): no
amplification, T Gaussian releases of a sum with sensitivity C. Checked against the spec's
values (``../shared/specs/paper001-dp-pfeddsu.md`` section 2.3) and against closed forms
computed here: the RDP of T Gaussian releases, T alpha / (2 sigma^2), converted as
dp_accounting does (Balle et al. 2020, Thm 21), and the exact (PLD) curve of a Gaussian
with mu = sqrt(T) / sigma (Dong, Roth & Su 2019; Balle & Wang 2018). Neighbouring relation:
add/remove one client; each client draws its share of the noise."""
import math

import numpy as np
import pytest
from scipy import optimize, stats

from tff_idp.privacy import accounting


def _rdp_closed_form_epsilon(sigma, rounds, delta):
    orders = np.concatenate([np.linspace(1.01, 8, 100), np.arange(8, 64, 0.5),
                             np.arange(64, 257)])
    rdp = rounds * orders / (2 * sigma ** 2)
    eps = rdp + np.log1p(-1 / orders) - (np.log(delta) + np.log(orders)) / (orders - 1)
    return float(np.min(eps))


def _gaussian_delta(eps, mu):
    return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("rounds,eps,rdp_sigma,pld_sigma", [
    (50, 1.0, 28.6052, 26.3795), (100, 1.0, 40.4539, 37.3063), (50, 0.5, 54.2165, 49.7225),
    (100, 2.0, 21.4911, 19.9381)])
def test_q1_noise_multipliers_match_the_spec_and_the_closed_forms(rounds, eps, rdp_sigma,
                                                                  pld_sigma):
    rdp = accounting.calibrate_noise_multiplier(eps, 1.0, rounds, 1e-5, "rdp")
    assert rdp == pytest.approx(rdp_sigma, rel=2e-3)
    assert _rdp_closed_form_epsilon(rdp, rounds, 1e-5) == pytest.approx(eps, rel=3e-3)
    pld = accounting.calibrate_noise_multiplier(eps, 1.0, rounds, 1e-5, "pld")
    exact = optimize.brentq(lambda s: _gaussian_delta(eps, math.sqrt(rounds) / s) - 1e-5,
                            1.0, 500.0)
    assert exact == pytest.approx(pld_sigma, rel=1e-4)
    assert pld == pytest.approx(exact, rel=2e-3)


def test_the_authors_search_gives_the_spec_opacus_style_values():
    """CENTAUR's (Opacus') search: double from 10, bisect to within 0.01 of the target,
    return the upper end: 28.75 at T = 50 and 40.625 at T = 100 (epsilon 1)."""
    assert accounting.calibrate_noise_multiplier(1.0, 1.0, 50, 1e-5, "rdp", 0.01) == \
        pytest.approx(28.75, abs=0.05)
    assert accounting.calibrate_noise_multiplier(1.0, 1.0, 100, 1e-5, "rdp", 0.01) == \
        pytest.approx(40.625, abs=0.05)
