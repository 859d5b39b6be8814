"""The array-summed RDP series (tff_idp.privacy.rdp_series) against dp_accounting's
term-by-term loop, and the project's RDP accountant (Poisson and fixed-size cohorts) against
dp_accounting's own."""
import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant

from tff_idp.privacy import accounting, rdp_series

ORDERS = rdp_privacy_accountant.DEFAULT_RDP_ORDERS


@pytest.mark.parametrize("q", [1e-5, 1e-3, 0.01, 0.08, 0.3, 0.6, 0.95])
@pytest.mark.parametrize("sigma", [0.3, 0.84, 1.5, 4.0, 20.0])
def test_rdp_equals_dp_accountings_at_every_default_order(q, sigma):
    """Equal to float64 summation order: both compute log(1 + tiny) for the tiniest values,
    so the comparison is relative 1e-9 or absolute 1e-12 (an epsilon moves by less than
    1e-12 x rounds)."""
    ours = rdp_series.poisson_gaussian_rdp(q, sigma, ORDERS)
    theirs = rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(q, sigma, ORDERS)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


def test_the_edge_cases_are_dp_accountings():
    for q, sigma in [(0.0, 1.0), (1.0, 1.3), (0.5, 0.0)]:
        np.testing.assert_array_equal(
            rdp_series.poisson_gaussian_rdp(q, sigma, ORDERS),
            rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(q, sigma, ORDERS))


@pytest.mark.parametrize("sampling,event", [
    ("poisson", accounting.training_event(0.84, 0.6, 2)),
    ("poisson", accounting.training_event(1.2, 0.02, 500)),
    ("poisson", dp_accounting.ComposedDpEvent([accounting.training_event(2.0, 0.1, 30),
                                               accounting.training_event(0.9, 1.0, 3)])),
    # fixed-size cohorts, replace-one (tff_idp.privacy.rdp_wor: tests/privacy/test_rdp_wor.py)
    ("fixed", accounting.training_event(1.0, 0.1, 10, sampling="fixed", population=100)),
    ("fixed", dp_accounting.ComposedDpEvent([
        accounting.training_event(2.1665, 0.02, 50, sampling="fixed", population=2000),
        accounting.training_event(0.9, 0.5, 3, sampling="fixed", population=12)]))])
def test_the_accountants_epsilon_and_order_are_dp_accountings(sampling, event):
    """What the ledger and the calibrations compose with: the same epsilon to 1e-10 relative
    at the same optimal order as dp_accounting's own accountant."""
    relation = (dp_accounting.NeighboringRelation.REPLACE_ONE if sampling == "fixed" else
                dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    ours = accounting.make_accountant("rdp", sampling)
    theirs = dp_accounting.rdp.RdpAccountant(neighboring_relation=relation)
    ours.compose(event)
    theirs.compose(event)
    for delta in (1e-5, 6000 ** -1.1):
        e1, o1 = ours.get_epsilon_and_optimal_order(delta)
        e2, o2 = theirs.get_epsilon_and_optimal_order(delta)
        assert e1 == pytest.approx(e2, rel=1e-10) and o1 == o2


def test_a_row_that_cancels_below_float64_is_summed_by_dp_accountings_loop(monkeypatch):
    """No rate and noise of the tests cancels (a row's signed terms summing to 0 or less in
    float64), so the fallback is forced for every row of the first pass (the orders whose
    series stop within 64 terms): those get dp_accounting's own value, the rest the arrays'."""
    alphas = np.asarray([1.5, 2.5, 7.25])
    first_pass = rdp_series._frac_terms(0.3, 1.1, alphas, 64)[3] > 0
    assert first_pass.any() and not first_pass.all()
    arrays = rdp_series.log_a_fracs(0.3, 1.1, alphas)
    real = rdp_series._signed_logsumexp_rows

    def cancels_in_the_first_pass(log_terms, signs, kept):
        out = real(log_terms, signs, kept)
        return np.full_like(out, np.nan) if kept.shape[1] == 64 else out

    monkeypatch.setattr(rdp_series, "_signed_logsumexp_rows", cancels_in_the_first_pass)
    forced = rdp_series.log_a_fracs(0.3, 1.1, alphas)
    for k, alpha in enumerate(alphas):
        expected = (rdp_privacy_accountant._compute_log_a_frac(0.3, 1.1, alpha)
                    if first_pass[k] else arrays[k])
        assert forced[k] == expected
        assert forced[k] == pytest.approx(arrays[k], rel=1e-12)
