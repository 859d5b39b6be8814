"""Conformance of every method's privacy plan with an independent accountant.

In the style of dp-accounting's ``privacy_accountant_test.py``: one abstract class of checks,
one subclass per setting. For each private method the ledger's epsilon per group (what a run
reports) is recomputed from the plan's (q_m, sigma_m) by ``independent_rdp`` (closed forms at
integer orders, written from the papers): the independent value is never below the ledger's
claim (a claim below it would be an under-report) and within 1% of it (the ledger is not
wastefully loose either). The independent orders are a subset of the ledger's, so "never
below" is what a correct ledger must satisfy.
"""
import numpy as np
import pytest

from tff_idp.algorithms.plan import PrivacySetting
from tff_idp.methods import PLANNERS
from tff_idp.privacy import PrivacyLedger, accounting

from . import independent_rdp as ind

PRIVATE = sorted(m for m in PLANNERS if m != "p_fedavg")
# the SAMPLE/SCALE calibrations are Poisson-only (paper 004 samples clients by Bernoulli
# draws); config validation refuses them with sampling='fixed'
FIXED_OK = ["dp_fedavg", "gdpfed", "gdpfed_opc", "gdpfed_plus", "pfa"]


def independent_epsilon(plan, setting, group):
    q, z = plan.rates[group], plan.noise_multipliers[group]
    if group in plan.observed_groups:
        f = lambda a: ind.observed_gaussian_rdp(q, z, a)
    elif setting.sampling == "fixed":
        n = setting.group_sizes[group]
        m = max(1, round(q * n))
        f = lambda a: ind.wor_gaussian_rdp(n, m, z / 2.0, a)   # replace-one: 2C sensitivity
    else:
        f = lambda a: ind.poisson_gaussian_rdp(q, z, a)
    convert = ind.basic_epsilon if setting.accountant == "rdp_basic" else ind.epsilon
    return convert(f, setting.rounds, setting.delta)


class PlanConformance:
    setting: PrivacySetting
    methods = PRIVATE
    extra = {}

    def _plan(self, method):
        return PLANNERS[method](self.setting, local_lr=0.1, local_steps=5,
                                **self.extra.get(method, {}))

    def _ledger_claims(self, plan):
        s = self.setting
        groups = np.repeat(np.arange(len(s.budgets)), s.group_sizes)
        ledger = PrivacyLedger(budgets=np.asarray(s.budgets)[groups], groups=groups,
                               delta=s.delta, sampling=s.sampling, group_sizes=s.group_sizes,
                               observed_groups=plan.observed_groups, accountant=s.accountant)
        return ledger.check_plan([plan.round_mechanisms()] * s.rounds)

    def test_ledger_agrees_with_independent_accountant(self, method):
        if method not in self.methods:
            pytest.skip(f"{method} is not offered with sampling={self.setting.sampling!r}")
        plan = self._plan(method)
        claims = self._ledger_claims(plan)
        for g, claim in claims.items():
            independent = independent_epsilon(plan, self.setting, g)
            assert independent >= claim * (1 - 1e-9), (method, g, claim, independent)
            assert independent <= claim * 1.01, (method, g, claim, independent)
            assert claim <= self.setting.budgets[g] * (1 + 1e-6)


@pytest.mark.parametrize("method", PRIVATE)
class TestPoissonFmnist(PlanConformance):
    """GDPFed's FMNIST setting (Table I), the authors' calibration search."""
    setting = PrivacySetting(budgets=[0.5, 1.5, 3.0], group_sizes=[2000, 2000, 2000],
                             delta=accounting.default_delta(6000), rounds=50,
                             expected_rate=0.02, clip=1.5, tolerance=0.01)


@pytest.mark.parametrize("method", PRIVATE)
class TestPoissonFmnistBasicConversion(PlanConformance):
    """The same, calibrated and accounted with the conversion paper 003 writes as Lemma 4
    (``accountant="rdp_basic"``)."""
    setting = PrivacySetting(budgets=[0.5, 1.5, 3.0], group_sizes=[2000, 2000, 2000],
                             delta=accounting.default_delta(6000), rounds=50,
                             expected_rate=0.02, clip=1.5, tolerance=0.01,
                             accountant="rdp_basic")


@pytest.mark.parametrize("method", PRIVATE)
class TestPoissonUnequalPerRowPFA(PlanConformance):
    """Unequal groups, exact calibration, PFA with per-row accounting of its public rows."""
    setting = PrivacySetting(budgets=[1.0, 2.0, 4.0], group_sizes=[100, 300, 200],
                             delta=1e-5, rounds=30, expected_rate=0.1, clip=1.0)
    extra = {"pfa": {"pfa_accounting": "per-row"}}


@pytest.mark.parametrize("method", PRIVATE)
class TestFixedSizeCohorts(PlanConformance):
    """Fixed-size cohorts per group (replace-one), the unequal sizes of the audit's item 6."""
    setting = PrivacySetting(budgets=[0.5, 1.5, 3.0], group_sizes=[250, 167, 83],
                             delta=accounting.default_delta(500), rounds=30,
                             expected_rate=0.1, clip=1.0, sampling="fixed")
    methods = FIXED_OK
