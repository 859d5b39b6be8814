"""Method plans: the numbers each method runs with, checked against the privacy core."""
import math

import numpy as np
import pytest

from tff_idp.algorithms.plan import PrivacySetting, combination_weights
from tff_idp.methods import PLANNERS
from tff_idp.privacy import PrivacyLedger, accounting

SETTING = PrivacySetting(budgets=[0.5, 1.5, 3.0], group_sizes=[2000, 2000, 2000],
                         delta=accounting.default_delta(6000), rounds=50, expected_rate=0.02,
                         clip=1.5, tolerance=0.01)


@pytest.mark.parametrize("method", sorted(PLANNERS))
def test_every_private_plan_respects_every_budget(method):
    plan = PLANNERS[method](SETTING, local_lr=0.1, local_steps=5)
    ledger = PrivacyLedger(budgets=np.repeat(SETTING.budgets, 2), groups=[0, 0, 1, 1, 2, 2],
                           delta=SETTING.delta)
    if plan.private:
        spent = ledger.check_plan([plan.round_mechanisms()] * SETTING.rounds)
        assert all(spent[g] <= SETTING.budgets[g] * (1 + 1e-6) for g in spent)
    expected_cohort = np.dot(plan.rates, SETTING.group_sizes)
    assert expected_cohort == pytest.approx(0.02 * 6000, rel=0.01)


def test_gdpfed_plans_match_table5_fmnist():
    gdp = PLANNERS["gdpfed"](SETTING)
    assert [z * z for z in gdp.noise_multipliers] == pytest.approx([2.26, 0.90, 0.53], rel=0.02)
    plus = PLANNERS["gdpfed_plus"](SETTING, rates=[0.0069, 0.0189, 0.0342])
    assert [z * z for z in plus.noise_multipliers] == pytest.approx([1.42, 0.87, 0.70], rel=0.02)
    assert plus.keep_fractions == [0.7, 0.8, 0.9]
    assert plus.noise_stddevs == pytest.approx([z * 1.5 for z in plus.noise_multipliers])
    dp = PLANNERS["dp_fedavg"](SETTING)
    assert dp.noise_multipliers[0] ** 2 == pytest.approx(2.26, rel=0.02)
    assert dp.num_aggregation_groups == 1


def test_combination_weights():
    cohorts = [13.8, 37.8, 68.4]
    paper = combination_weights(cohorts, SETTING)
    r = np.asarray(cohorts)
    assert paper == pytest.approx(r ** 3 / (120 * np.sum(r ** 2)))
    equal = combination_weights([40, 40, 40], SETTING)
    assert equal == pytest.approx([1 / 9] * 3)   # omega on sums: the mean divided by M
    import dataclasses
    norm = combination_weights(cohorts, dataclasses.replace(SETTING, group_weighting="normalized"))
    assert sum(norm) == pytest.approx(1.0)


def test_idp_scale_plan_shares_one_noise():
    plan = PLANNERS["idp_scale"](SETTING)
    assert len(set(np.round(plan.noise_stddevs, 9))) == 1
    for clip, z in zip(plan.clips, plan.noise_multipliers):
        assert plan.noise_stddevs[0] / clip == pytest.approx(z)


def test_idp_sample_at_the_papers_printed_rates_uses_the_largest_group_sigma():
    """003 App. B.2 prints FMNIST's SAMPLE rates (0.82, 2.80, 2.38)%; no one sigma meets every
    budget with equality there, so the plan takes the largest of the groups' own sigmas.
    Checked against dp_accounting directly (Poisson-sampled Gaussian, RDP, T = 50)."""
    import dp_accounting
    rates = [0.0082, 0.0280, 0.0238]
    plan = PLANNERS["idp_sample"](SETTING, rates=rates)
    assert plan.rates == rates and len(set(plan.noise_multipliers)) == 1
    sigma = plan.noise_multipliers[0]

    def eps(q):
        acc = dp_accounting.rdp.RdpAccountant()
        acc.compose(dp_accounting.PoissonSampledDpEvent(
            q, dp_accounting.GaussianDpEvent(sigma)), SETTING.rounds)
        return acc.get_epsilon(SETTING.delta)
    spent = [eps(q) for q in rates]
    assert spent[0] == pytest.approx(0.5, rel=0.01)      # the binding group
    assert spent[1] == pytest.approx(1.035, abs=0.01) and spent[2] == pytest.approx(0.906, abs=0.01)
    assert sigma ** 2 == pytest.approx(1.48, rel=0.02)   # against 0.82 at SAMPLE's own rates
    own = PLANNERS["idp_sample"](SETTING)
    assert own.noise_multipliers[0] ** 2 == pytest.approx(0.818, rel=0.02)
    assert own.rates[0] < 0.001 < 0.04 < own.rates[2]


def test_p_fedavg_is_not_private():
    plan = PLANNERS["p_fedavg"](SETTING)
    assert not plan.private and math.isinf(plan.clips[0]) and plan.noise_stddevs == [0.0]


def test_dp_fedavg_fixed_cohorts_meet_the_strictest_budget_in_every_group():
    """Audit item 6: DP-FedAvg calibrated on the smallest group while the ledger checks each
    group's own size, so a valid run was refused (planned 0.5217 > 0.5 for 250/167/83)."""
    import dataclasses
    setting = dataclasses.replace(SETTING, group_sizes=[250, 167, 83], rounds=30,
                                  expected_rate=0.1, sampling="fixed", tolerance=None,
                                  delta=accounting.default_delta(500))
    plan = PLANNERS["dp_fedavg"](setting)
    groups = np.repeat([0, 1, 2], setting.group_sizes)
    ledger = PrivacyLedger(budgets=np.asarray(setting.budgets)[groups], groups=groups,
                           delta=setting.delta, sampling="fixed",
                           group_sizes=setting.group_sizes)
    spent = ledger.check_plan([plan.round_mechanisms()] * setting.rounds)
    assert max(spent.values()) == pytest.approx(0.5, rel=1e-4)    # the binding group
    assert all(e <= 0.5 * (1 + 1e-6) for e in spent.values())


def test_pfa_paper_accounting_is_marked_and_per_row_accounting_holds():
    """Audit item 3: PFA's public rows reach the server one by one. The paper's adaptation
    keeps its numbers but says the ledger does not cover them; per-row accounting
    calibrates the public group for a release of one client the server sees."""
    paper = PLANNERS["pfa"](SETTING)
    assert paper.accounting_gap and "one by one" in paper.accounting_gap
    assert paper.observed_groups == []
    # one public row at the paper's public sigma is far over the public budget
    public_sigma = paper.noise_multipliers[2]
    assert accounting.observed_epsilon(public_sigma, SETTING.expected_rate, SETTING.rounds,
                                       SETTING.delta) > SETTING.budgets[2]
    row = PLANNERS["pfa"](SETTING, pfa_accounting="per-row")
    assert row.accounting_gap is None and row.observed_groups == [2]
    assert row.noise_multipliers[:2] == pytest.approx(paper.noise_multipliers[:2])
    assert row.noise_multipliers[2] > public_sigma
    eps = accounting.observed_epsilon(row.noise_multipliers[2], SETTING.expected_rate,
                                      SETTING.rounds, SETTING.delta)
    assert eps == pytest.approx(SETTING.budgets[2], rel=1e-5) and eps <= SETTING.budgets[2]
    ledger = PrivacyLedger(budgets=np.repeat(SETTING.budgets, 2), groups=[0, 0, 1, 1, 2, 2],
                           delta=SETTING.delta, observed_groups=row.observed_groups)
    spent = ledger.check_plan([row.round_mechanisms()] * SETTING.rounds)
    assert spent[2] == pytest.approx(eps, rel=1e-9)
    # the same plan accounted as an amplified sum would claim far less: the ledger must not
    plain = PrivacyLedger(budgets=np.repeat(SETTING.budgets, 2), groups=[0, 0, 1, 1, 2, 2],
                          delta=SETTING.delta)
    assert plain.group_epsilons([row.round_mechanisms()] * SETTING.rounds)[2] < spent[2] / 2


def test_pfa_share_noise_the_server_sees_on_a_public_row():
    """PFA with public_noise='share': a public row is seen alone with sigma_m / sqrt(k_m) of
    the realised count k_m (at least 1); the other groups keep sigma_m; 'full' keeps all."""
    from tff_idp.algorithms.plan import MethodPlan
    common = dict(method="pfa", private=True, rates=[0.1, 0.2, 0.3],
                  noise_multipliers=[2.0, 1.5, 1.0], aggregation_groups=[0, 1, 2],
                  clips=[1.0] * 3, noise_stddevs=[2.0, 1.5, 1.0], expected_cohorts=[4, 8, 9],
                  weights=[1.0] * 3, keep_fractions=[1.0] * 3, public_group=2,
                  projected_group=0)
    share = MethodPlan(**common, public_noise="share")
    assert share.server_multipliers([4, 8, 9]) == pytest.approx([2.0, 1.5, 1.0 / 3])
    assert share.server_multipliers([4, 8, 0]) == pytest.approx([2.0, 1.5, 1.0])
    assert MethodPlan(**common).server_multipliers([4, 8, 9]) == [2.0, 1.5, 1.0]
