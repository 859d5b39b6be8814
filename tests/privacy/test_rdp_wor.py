"""The array form of the without-replacement Gaussian's RDP bound (tff_idp.privacy.rdp_wor)
against dp_accounting's loop (the accountant that composes it: tests/privacy/
test_rdp_series.py; both against an independent implementation of the same theorem in
500-digit arithmetic: tests/privacy/test_conformance.py)."""
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant

from tff_idp.privacy import rdp_wor

ORDERS = rdp_privacy_accountant.DEFAULT_RDP_ORDERS


@pytest.mark.parametrize("q,sigma", [(0.004, 0.5), (0.02, 1.08), (0.1, 3.0), (0.3, 0.4),
                                     (0.6, 12.0), (0.95, 1.0), (1e-6, 1.7), (1e-3, 1e4)])
def test_rdp_equals_dp_accountings_at_every_default_order(q, sigma):
    """Every default order: the exact sums to 256, the Stirling form at 512 and 1024, the
    interpolation between integers. Equal up to float64 rounding (dp_accounting adds the
    terms onto 1 one by one, here all at once): relative 1e-12, the tiny values of a tiny
    rate or a large noise (log(1 + 1e-13) and less) included."""
    ours = rdp_wor.wor_gaussian_rdp(q, sigma, ORDERS)
    theirs = rdp_privacy_accountant._compute_rdp_sample_wor_gaussian(q, sigma, ORDERS)
    assert np.isfinite(theirs).all() and (theirs > 0).all()
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0)


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
