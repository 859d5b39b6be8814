"""The array form of the without-replacement Gaussian's RDP bound (tff_idp.privacy.rdp_wor)
against dp_accounting's loop, and the project's accountant on fixed-size cohorts against
dp_accounting's own. (tests/privacy/test_conformance.py checks both against an independent
implementation of the same theorem in 500-digit arithmetic.)"""
import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant

from tff_idp.privacy import accounting, rdp_wor

ORDERS = rdp_privacy_accountant.DEFAULT_RDP_ORDERS


@pytest.mark.parametrize("q,sigma", [(0.004, 0.5), (0.02, 1.08), (0.1, 3.0), (0.3, 0.4),
                                     (0.6, 12.0), (0.95, 1.0)])
def test_rdp_equals_dp_accountings_at_every_default_order(q, sigma):
    """Every default order: the exact sums to 256, the Stirling form at 512 and 1024, the
    interpolation between integers. Equal up to float64 rounding (dp_accounting adds the
    terms one by one, here in one log-sum-exp): relative 1e-9 or absolute 1e-12."""
    ours = rdp_wor.wor_gaussian_rdp(q, sigma, ORDERS)
    theirs = rdp_privacy_accountant._compute_rdp_sample_wor_gaussian(q, sigma, ORDERS)
    assert np.isfinite(theirs).all()
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


def test_one_table_of_differences_serves_every_order():
    """The k-th difference does not depend on how many are computed: the table for order 256
    begins with dp_accounting's table for order 7, entry for entry."""
    cgf = lambda x: x * 1.0 * (x + 1) / (2.0 * 0.9 ** 2)
    theirs, _ = rdp_privacy_accountant._get_forward_diffs(cgf, 7)
    np.testing.assert_allclose(rdp_wor.log_forward_differences(0.9, 256)[:9], theirs,
                               rtol=1e-12)


def test_the_edge_cases_are_dp_accountings():
    """q = 0: nothing released; q = 1: the Gaussian itself (dp_accounting's closed form);
    no noise: infinite (where dp_accounting divides by zero); an order of 1 or below, or a
    rate outside [0, 1], refused."""
    for q, sigma in [(0.0, 1.0), (1.0, 1.3)]:
        np.testing.assert_array_equal(
            rdp_wor.wor_gaussian_rdp(q, sigma, ORDERS),
            rdp_privacy_accountant._compute_rdp_sample_wor_gaussian(q, sigma, ORDERS))
    assert np.isinf(rdp_wor.wor_gaussian_rdp(0.5, 0.0, ORDERS)).all()
    for q, orders in [(0.5, [1.0, 2.0]), (1.5, [2.0]), (-0.1, [2.0])]:
        with pytest.raises(ValueError):
            rdp_wor.wor_gaussian_rdp(q, 1.0, orders)


@pytest.mark.parametrize("event", [
    accounting.training_event(1.0, 0.1, 10, sampling="fixed", population=100),
    dp_accounting.ComposedDpEvent([
        accounting.training_event(2.1665, 0.02, 50, sampling="fixed", population=2000),
        accounting.training_event(0.9, 0.5, 3, sampling="fixed", population=12)])])
def test_the_accountants_epsilon_and_order_are_dp_accountings(event):
    """The ledger's and the calibration's accountant (replace-one): the same epsilon to
    1e-10 relative at the same optimal order."""
    ours = accounting.make_accountant("rdp", "fixed")
    theirs = dp_accounting.rdp.RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    ours.compose(event)
    theirs.compose(event)
    for delta in (1e-5, 6000 ** -1.1):
        e1, o1 = ours.get_epsilon_and_optimal_order(delta)
        e2, o2 = theirs.get_epsilon_and_optimal_order(delta)
        assert e1 == pytest.approx(e2, rel=1e-10) and o1 == o2
