"""The canary audit's scoring and bounds (tff_idp.audit.bounds) against hand-computed cases
from the papers' formulas and against the exact Gaussian profile."""
import math

import numpy as np
import pytest
from scipy import stats

from tff_idp.audit import (best_lower_bound, cosine_scores, gaussian_pair_delta, guesses,
                           lower_bound, one_shot_epsilon, p_value)
from tff_idp.privacy.gaussian_releases import exact_gaussian_delta, exact_gaussian_epsilon


def test_p_value_hand_computed():
    """Steinke et al. Thm. 3 by hand: one canary, one right guess, epsilon 0: P[Bin(1, 1/2)
    >= 1] = 1/2, plus 2 m delta x P[Bin = 0] / 1 = delta. Two of two right at epsilon ln 3:
    p = 3/4, P[Bin(2, 3/4) = 2] = 9/16, and the delta term's best window is i = 1:
    P[Bin = 1] = 6/16."""
    assert p_value(1, 1, 1, 0.0, 0.0) == pytest.approx(0.5)
    assert p_value(1, 1, 1, 0.0, 1e-3) == pytest.approx(0.5 + 1e-3)
    assert p_value(2, 2, 2, math.log(3), 0.0) == pytest.approx(9 / 16)
    assert p_value(2, 2, 2, math.log(3), 1e-2) == pytest.approx(9 / 16 + 2 * 2 * 1e-2 * 6 / 16)


def test_all_guesses_right_give_the_largest_bound_their_count_allows():
    """With every guess right the bound is where P[Bin(r, p) = r] = p^r meets beta: for
    delta = 0, epsilon = logit(beta^(1/r)); above 3 for 100 guesses (issue 38)."""
    beta = 0.05
    for r in (20, 100, 400):
        p = beta ** (1 / r)
        assert lower_bound(1000, r, r, 0.0, 0.95) == pytest.approx(math.log(p / (1 - p)),
                                                                   abs=1e-4)
    assert lower_bound(1000, 100, 100, 1e-5, 0.95) > 3


def test_chance_level_guesses_bound_nothing():
    assert lower_bound(200, 100, 50, 1e-5) == 0.0


def test_guesses_and_cosines():
    scores = [0.9, -0.2, 0.5, 0.1, -0.8, 0.0]
    inserted = [True, False, True, False, False, True]
    assert guesses(scores, inserted, 2, 2) == (4, 4)     # top 0, 2 in; bottom 4, 1 out
    assert guesses(scores, inserted, 3, 2) == (5, 4)     # the third "in", canary 3, is out
    d = np.eye(3)
    np.testing.assert_allclose(cosine_scores([2.0, 0.0, -2.0], d),
                               [1 / math.sqrt(2), 0.0, -1 / math.sqrt(2)])


def test_gaussian_pair_delta_is_the_exact_profile_for_equal_stds():
    for eps, mu in ((0.5, 1.0), (2.0, 2.5)):
        assert gaussian_pair_delta(eps, mu, 1.0, 0.0, 1.0) == pytest.approx(
            exact_gaussian_delta(eps, mu), rel=1e-4)
    # unequal stds: larger than either equal-std profile with the same means
    assert gaussian_pair_delta(1.0, 1.0, 2.0, 0.0, 1.0) > exact_gaussian_delta(1.0, 1.0)


def test_one_shot_estimate_recovers_a_gaussian_mechanisms_epsilon():
    """Scores of the inserted canaries shifted by mu from the others': the fitted Gaussians
    have equal stds and the estimate is the mu-Gaussian mechanism's epsilon. Drawn
    independently from N(mu, 1) and N(0, 1), it comes within 10% (20,000 scores each: a 1%
    mismatch of the fitted stds already moves it by about 8% at delta 1e-3, the tails'
    privacy loss being quadratic when the stds differ)."""
    rng = np.random.default_rng(0)
    for mu in (0.5, 1.0, 2.0):
        out = rng.normal(0, 1, 20000)
        out = (out - out.mean()) / out.std(ddof=1)
        assert one_shot_epsilon(out + mu, out, 1e-5) == pytest.approx(
            exact_gaussian_epsilon(mu, 1e-5), rel=1e-3)
        est = one_shot_epsilon(rng.normal(mu, 1, 20000), rng.normal(0, 1, 20000), 1e-3)
        assert est == pytest.approx(exact_gaussian_epsilon(mu, 1e-3), rel=0.1)
    with pytest.raises(ValueError):
        one_shot_epsilon([1.0], [0.0, 1.0], 1e-5)


def test_best_lower_bound_separated_and_overlapping_scores():
    rng = np.random.default_rng(1)
    inserted = rng.random(1000) < 0.5
    clean = np.where(inserted, 1.0, 0.0) + 1e-3 * rng.normal(size=1000)   # noise off
    best = best_lower_bound(clean, inserted, 1e-5, 0.95)
    assert best["correct"] == best["guesses"] == 500
    assert best["epsilon"] == pytest.approx(lower_bound(1000, 500, 500, 1e-5, 0.95))
    noisy = np.where(inserted, 0.05, 0.0) + rng.normal(size=1000)         # heavy noise
    assert best_lower_bound(noisy, inserted, 1e-5, 0.95)["epsilon"] < 0.5
    assert stats.binom.sf(0, 1, 0.5) == 0.5            # scipy's convention the formula uses


def test_the_closed_form_null_is_the_random_directions_cosine():
    """Never-inserted canaries' cosines with a vector independent of them are N(0, 1/d)
    (Andrew et al. Sec. 4); with the inserted ones' cosines shifted by mu / sqrt(d) and the
    same std, the estimate is the mu-Gaussian mechanism's epsilon."""
    from tff_idp.audit import one_shot_epsilon_null
    rng = np.random.default_rng(3)
    d = 650
    u = rng.standard_normal((4000, d))
    cos = cosine_scores(rng.standard_normal(d), u)
    assert np.std(cos) == pytest.approx(d ** -0.5, rel=0.05) and abs(np.mean(cos)) < 3e-3
    spread = np.linspace(-1, 1, 2001)
    null_like = spread / spread.std(ddof=1) * d ** -0.5
    assert one_shot_epsilon_null(null_like + d ** -0.5, d, 1e-5) == pytest.approx(
        exact_gaussian_epsilon(1.0, 1e-5), rel=1e-3)
