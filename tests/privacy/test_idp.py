"""IDP SAMPLE and SCALE calibration (paper 004; 003 App. B.2)."""
import functools

import dp_accounting
import numpy as np
import pytest
from dp_accounting import rdp

from tff_idp.privacy import accounting, idp

# paper 004: clients, budgets; 420 rounds, 30 clients per round, delta 1e-4
DATASETS = {"emnist": (3383, (1.0, 2.0, 3.0)), "cifar10": (500, (10.0, 20.0, 30.0)),
            "svhn": (725, (10.0, 20.0, 30.0))}
DISTRIBUTIONS = {"34-43-23": (0.34, 0.43, 0.23), "54-37-9": (0.54, 0.37, 0.09)}
# our calibration (sigma, rates), pinned: every group's epsilon is its budget to 1e-6 (the
# rates are the largest feasible on dp-accounting's full orders; before the audit's item 5
# they were searched on 28 orders only and left up to 8% of a budget unspent). Four of the
# six settings run here (each takes seconds); the others: cifar10 54-37-9 (0.74590,
# (0.039908, 0.076965, 0.110804)), svhn 54-37-9 (0.63962, (0.026325, 0.053993, 0.079851)).
PINNED = {
    ("emnist", "34-43-23"): (0.83667, (0.002901, 0.009888, 0.015782)),
    ("emnist", "54-37-9"): (0.90073, (0.004641, 0.012533, 0.01916)),
    ("cifar10", "34-43-23"): (0.68643, (0.032281, 0.064058, 0.093388)),
    ("svhn", "34-43-23"): (0.5928, (0.020656, 0.044255, 0.066638)),
}


@functools.lru_cache(maxsize=None)
def _calibrate(name, dist):
    n, budgets = DATASETS[name]
    return idp.sample_rates(budgets, DISTRIBUTIONS[dist], 30 / n, 420, 1e-4)


@pytest.mark.parametrize("name,dist", sorted(PINNED))
def test_sample_rates_paper_004(name, dist):
    n, budgets = DATASETS[name]
    c = _calibrate(name, dist)
    sigma, rates = PINNED[(name, dist)]
    assert c.noise_multiplier == pytest.approx(sigma, rel=1e-3)
    assert c.rates == pytest.approx(rates, rel=1e-3)
    assert abs(np.dot(DISTRIBUTIONS[dist], c.rates) - 30 / n) <= 0.005 * 30 / n
    for q, budget in zip(c.rates, budgets):
        acc = rdp.RdpAccountant()      # independent recomputation, all default orders
        acc.compose(dp_accounting.PoissonSampledDpEvent(
            q, dp_accounting.GaussianDpEvent(c.noise_multiplier)), 420)
        assert acc.get_epsilon(1e-4) <= budget * (1 + 1e-9)
        assert acc.get_epsilon(1e-4) >= 0.999 * budget    # SAMPLE spends the budget


@pytest.mark.parametrize("sigma,budget,rounds", [(1.0, 0.5, 5), (2.0, 0.5, 5),
                                                 (1.0, 1.5, 50), (0.9, 3.0, 50)])
def test_max_rate_is_the_largest_feasible_on_the_full_orders(sigma, budget, rounds):
    """Audit item 5: searching only the fast orders returned rates below what the budget
    allows (T = 5, epsilon 0.5: epsilon 0.434 spent). Now the rate spends the budget under
    dp-accounting's full orders, and 0.1% more is over it."""
    q = idp.max_rate(sigma, budget, rounds, 1e-5)

    def eps(rate):
        acc = rdp.RdpAccountant()
        acc.compose(dp_accounting.PoissonSampledDpEvent(
            rate, dp_accounting.GaussianDpEvent(sigma)), rounds)
        return acc.get_epsilon(1e-5)

    assert budget * (1 - 1e-4) <= eps(q) <= budget
    assert eps(q * 1.001) > budget


def test_sample_groups_are_paired_by_budget_not_by_position():
    a = idp.sample_rates((1.0, 3.0), (0.5, 0.5), 0.01, 50, 1e-4)
    b = idp.sample_rates((3.0, 1.0), (0.5, 0.5), 0.01, 50, 1e-4)
    assert a.noise_multiplier == pytest.approx(b.noise_multiplier)
    assert a.rates == pytest.approx(b.rates[::-1])
    assert a.rates[0] < a.rates[1]


@pytest.mark.parametrize("budgets,ratios", [
    ((1.0, 2.0), (0.5, 0.3, 0.2)),      # lengths differ
    ((1.0, 0.0, 3.0), (0.3, 0.3, 0.4)),   # non-positive budget
    ((1.0, 2.0, 3.0), (0.5, 0.0, 0.5)),   # empty group
    ((1.0, 2.0, 3.0), (0.5, 0.3, 0.3)),   # ratios do not sum to 1
])
def test_bad_groups_raise(budgets, ratios):
    with pytest.raises(ValueError):
        idp.sample_rates(budgets, ratios, 0.01, 50, 1e-4)
    with pytest.raises(ValueError):
        idp.scale_clips(budgets, ratios, 0.02, 50, 1e-4, 1.0)


# GDPFed App. B.2 lists the SCALE clips its authors used; ours from the SCALE definition.
SCALE_CASES = {  # n, T, budgets, q, C, paper clips, our clips
    "fmnist": (6000, 50, (0.5, 1.5, 3.0), 0.02, 1.5, (1.15, 1.51, 2.12), (1.058, 1.679, 2.179)),
    "svhn": (6000, 100, (0.5, 1.5, 3.0), 0.05, 1.0, (0.35, 0.53, 0.81), (0.577, 1.326, 1.948)),
    "cifar10": (600, 100, (2.0, 6.0, 12.0), 0.10, 1.5, (0.72, 1.03, 1.55), (0.948, 1.822, 2.526)),
    "shakespeare": (714, 50, (0.5, 1.5, 3.0), 0.10, 1.0, (0.73, 1.02, 1.52), (0.574, 1.316, 2.004)),
}


@pytest.mark.parametrize("name", sorted(SCALE_CASES))
def test_scale_clips(name):
    """Each group's effective noise multiplier sigma_bar C / C_p equals its calibrated sigma_p.

    Distance from the paper's listed clips: the ordering matches, the values do not (e.g.
    FMNIST ours (1.06, 1.68, 2.18) vs (1.15, 1.51, 2.12); SVHN ours all > C while the paper's
    are all < C). The paper's ratios C_3/C_1 (1.8-2.3) are flatter than sigma_1/sigma_3 of any
    accountant at these budgets; its code is not public, so the test pins ours."""
    n, T, budgets, q, C, _paper, ours = SCALE_CASES[name]
    delta = accounting.default_delta(n)
    s = idp.scale_clips(budgets, [1 / 3] * 3, q, T, delta, C, tolerance=0.01)
    assert s.clips == pytest.approx(ours, rel=2e-3)
    for clip, sigma_p in zip(s.clips, s.group_noise_multipliers):
        assert s.noise_multiplier * C / clip == pytest.approx(sigma_p)
        assert accounting.epsilon(sigma_p, q, T, delta) <= max(budgets)
    assert s.noise_multiplier == pytest.approx(np.mean(s.group_noise_multipliers))


def test_sample_names_the_group_whose_budget_no_rate_meets(monkeypatch):
    """Issue 33 item 5: when no rate above max_rate's floor fits a group at the shared sigma,
    the refusal names that group and its budget (it used to say 'sampling_rate=0.0 is out of
    range')."""
    from tff_idp.privacy import idp
    real = idp.max_rate
    monkeypatch.setattr(idp, "max_rate", lambda z, e, *a, **k: 0.0 if e < 1 else real(z, e, *a, **k))
    with pytest.raises(ValueError, match=r"group 0 \(budget 0.5\) cannot be met"):
        idp.sample_rates([0.5, 3.0], [0.5, 0.5], 0.1, 40, 1e-3)
