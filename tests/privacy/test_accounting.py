"""Calibration against GDPFed's noise-multiplier table (003 Table 5 / 000 Table III) and
independent recomputation of epsilons with dp_accounting."""
import dp_accounting
import numpy as np
import pytest
from dp_accounting import rdp

from tff_idp.privacy import accounting, gdpfed
from . import independent_rdp as ind

# dataset: n, T, budgets, q (%), Problem-1 rates (%) of Table I, Table 5 sigma^2 rows
TABLE5 = {
    "fmnist": (6000, 50, (0.5, 1.5, 3.0), 2, (0.69, 1.89, 3.42),
               2.26, (2.26, 0.90, 0.53), (1.42, 0.87, 0.70)),
    "svhn": (6000, 100, (0.5, 1.5, 3.0), 5, (1.66, 4.67, 8.68),
             13.20, (13.20, 2.50, 1.16), (2.38, 2.29, 2.23)),
    "cifar10": (600, 100, (2.0, 6.0, 12.0), 10, (3.61, 9.62, 16.77),
                3.52, (3.52, 0.95, 0.49), (0.98, 0.91, 0.83)),
    "shakespeare": (714, 50, (0.5, 1.5, 3.0), 10, (4.79, 9.83, 15.21),
                    17.14, (17.14, 3.26, 1.41), (4.45, 3.18, 2.46)),
}


def _close(ours, paper, rel):
    assert abs(ours - paper) <= rel * paper, (ours, paper)


@pytest.mark.parametrize("name", sorted(TABLE5))
def test_table5_dp_fedavg_and_gdpfed_rows(name):
    n, T, eps, q, _, dp, gdp, _ = TABLE5[name]
    delta = accounting.default_delta(n)
    z = accounting.calibrate_noise_multiplier(eps[0], q / 100, T, delta, tolerance=0.01)
    _close(z * z, dp, 0.02)
    zs = gdpfed.group_noise_multipliers(eps, [q / 100] * 3, T, delta, tolerance=0.01)
    for ours, paper in zip(zs, gdp):
        _close(ours * ours, paper, 0.02)


@pytest.mark.parametrize("name", sorted(TABLE5))
def test_table5_gdpfed_op_rows_at_table1_rates(name):
    n, T, eps, _, rates, _, _, op = TABLE5[name]
    zs = gdpfed.group_noise_multipliers(eps, [r / 100 for r in rates], T,
                                        accounting.default_delta(n), tolerance=0.01)
    for m, (ours, paper) in enumerate(zip(zs, op)):
        if name == "shakespeare" and m == 0:
            # Known gap: 4.70 vs 4.45 (5.6%). The rate 4.79% printed in Table I cannot give
            # 4.45 under any accountant we tried; 4.45 corresponds to q_1 of about 4.66%.
            _close(ours * ours, 4.70, 0.01)
            continue
        _close(ours * ours, paper, 0.02)


def test_exact_calibration_is_tighter_and_within_budget():
    delta = accounting.default_delta(6000)
    exact = accounting.calibrate_noise_multiplier(0.5, 0.02, 50, delta)
    search = accounting.calibrate_noise_multiplier(0.5, 0.02, 50, delta, tolerance=0.01)
    assert exact <= search
    assert abs(exact ** 2 - 2.25) < 0.01        # DESIGN.md: 2.25 with exact calibration
    for z in (exact, search):
        assert accounting.epsilon(z, 0.02, 50, delta) <= 0.5 + 1e-6
    assert accounting.epsilon(exact, 0.02, 50, delta) == pytest.approx(0.5, abs=1e-4)


def test_epsilon_matches_independent_dp_accounting():
    acc = rdp.RdpAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(
        0.05, dp_accounting.GaussianDpEvent(1.3)), 100)
    assert accounting.epsilon(1.3, 0.05, 100, 1e-5) == pytest.approx(acc.get_epsilon(1e-5))


def test_pld_calibration_inverts_pld_epsilon():
    delta = accounting.default_delta(6000)
    z = accounting.calibrate_noise_multiplier(0.5, 0.02, 50, delta, accountant="pld")
    assert accounting.epsilon(z, 0.02, 50, delta, accountant="pld") == pytest.approx(0.5, abs=5e-3)
    # PLD is tighter than RDP: less noise for the same budget
    assert z < accounting.calibrate_noise_multiplier(0.5, 0.02, 50, delta)


def test_fixed_size_sampling_is_replace_one_with_twice_the_sensitivity():
    """Audit item 1: under replace-one the clipped sum moves by up to 2C, so the Gaussian's
    multiplier in dp-accounting's without-replacement event is sigma / 2. The audit's case:
    N = 2000, cohort 40, T = 50, delta = 6000^-1.1; sigma = 2.1665 was calibrated to 0.5
    with the multiplier not halved, and is really epsilon 1.44."""
    delta = 6000 ** -1.1

    def replace_one(z):
        acc = rdp.RdpAccountant(
            neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
        acc.compose(dp_accounting.SampledWithoutReplacementDpEvent(
            2000, 40, dp_accounting.GaussianDpEvent(z)), 50)
        return acc.get_epsilon(delta)

    old_sigma = 2.1665
    assert replace_one(old_sigma) == pytest.approx(0.500, abs=2e-3)      # the old claim
    ours = accounting.epsilon(old_sigma, 0.02, 50, delta, sampling="fixed", population=2000)
    assert ours == pytest.approx(1.44, abs=0.01)
    assert ours == pytest.approx(replace_one(old_sigma / 2))
    z = accounting.calibrate_noise_multiplier(0.5, 0.02, 50, delta, sampling="fixed",
                                              population=2000)
    assert z == pytest.approx(2 * old_sigma, rel=2e-3)
    assert replace_one(z / 2) == pytest.approx(0.5, abs=1e-4)
    assert replace_one(z / 2) <= 0.5 + 1e-9
    with pytest.raises(ValueError):
        accounting.epsilon(1.0, 0.05, 20, 1e-5, accountant="pld", sampling="fixed",
                           population=1000)


def test_fixed_size_full_cohort_is_the_plain_gaussian_at_half_the_multiplier():
    acc = rdp.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(dp_accounting.GaussianDpEvent(2.0), 10)
    assert accounting.epsilon(4.0, 1.0, 10, 1e-5, sampling="fixed", population=50) == \
        pytest.approx(acc.get_epsilon(1e-5))


def test_calibration_sweep_of_small_and_large_rates():
    """Audit item 4: the exact search's bracket (1e-3, 1e4) failed for q below ~0.0011
    (dp-accounting's RDP turns slightly negative at sigma = 1e4). 40 rates from 1e-4 to 1
    at T = 50, epsilon 0.5: every calibration is within budget and spends it."""
    delta = 6000 ** -1.1
    assert accounting.calibrate_noise_multiplier(0.5, 0.00133, 50, delta) > 0   # the case
    for q in np.geomspace(1e-4, 1.0, 40):
        z = accounting.calibrate_noise_multiplier(0.5, float(q), 50, delta)
        eps = accounting.epsilon(z, float(q), 50, delta)
        assert 0.5 * (1 - 1e-4) <= eps <= 0.5, (q, z, eps)


def test_numpy_scalars_are_numbers_and_nan_is_not():
    """Audit item 7: numpy float32 inputs were refused as out of range."""
    ref = accounting.epsilon(1.0, 0.1, 10, 1e-5)
    assert accounting.epsilon(np.float32(1.0), np.float32(0.1), 10, np.float64(1e-5)) == \
        pytest.approx(ref, rel=1e-6)
    assert accounting.calibrate_noise_multiplier(np.float32(1.0), np.float32(0.1), 10,
                                                 1e-5) > 0
    for bad in (float("nan"), True, "1.0"):
        with pytest.raises(ValueError):
            accounting.epsilon(bad, 0.1, 10, 1e-5)


def test_observed_release_rdp_bounds():
    """A release the server sees per client (PFA's public rows, per-row accounting):
    at q = 1 exactly T Gaussian releases; below, between the Poisson-amplified epsilon (the
    server learns more than under amplification) and the q = 1 value."""
    delta = 1e-5
    acc = rdp.RdpAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(3.0), 20)
    assert accounting.observed_epsilon(3.0, 1.0, 20, delta) == \
        pytest.approx(acc.get_epsilon(delta), rel=1e-9)
    for q in (0.01, 0.1, 0.5):
        observed = accounting.observed_epsilon(3.0, q, 20, delta)
        assert accounting.epsilon(3.0, q, 20, delta) < observed < acc.get_epsilon(delta)
    # one row of the digits setting's public group (sigma 0.768) is already over budget 3
    assert accounting.observed_epsilon(0.768, 1.0, 1, 500 ** -1.1) > 3.0
    z = accounting.calibrate_observed_noise_multiplier(3.0, 0.1, 40, 500 ** -1.1)
    assert accounting.observed_epsilon(z, 0.1, 40, 500 ** -1.1) == pytest.approx(3.0, rel=1e-5)
    assert accounting.observed_epsilon(z, 0.1, 40, 500 ** -1.1) <= 3.0


@pytest.mark.parametrize("kwargs", [dict(target_epsilon=0.0), dict(target_epsilon=-1.0),
                                    dict(sampling_rate=0.0), dict(sampling_rate=1.5),
                                    dict(delta=0.0), dict(rounds=0)])
def test_calibration_rejects_bad_input(kwargs):
    args = dict(target_epsilon=1.0, sampling_rate=0.1, rounds=10, delta=1e-5) | kwargs
    with pytest.raises(ValueError):
        accounting.calibrate_noise_multiplier(**args)


def test_basic_conversion_of_t_gaussians_is_its_closed_form():
    """accountant="rdp_basic" (Mironov 2017 Prop. 3, paper 003 Lemma 4) on T Gaussian
    releases: RDP T alpha / (2 z^2), so epsilon = min a alpha + L / (alpha - 1) with
    a = T / (2 z^2), L = log(1/delta), at alpha = 1 + sqrt(L / a): a + 2 sqrt(a L). On a
    dense grid of orders the accountant must land on it."""
    z, T, delta = 3.0, 20, 1e-5
    orders = np.linspace(1.05, 60.0, 20000)
    acc = accounting.make_accountant("rdp_basic", orders=orders)
    acc.compose(dp_accounting.GaussianDpEvent(z), T)
    a, L = T / (2 * z * z), np.log(1 / delta)
    eps, best = acc.get_epsilon_and_optimal_order(delta)
    assert eps == pytest.approx(a + 2 * np.sqrt(a * L), rel=1e-6)
    assert best == pytest.approx(1 + np.sqrt(L / a), abs=0.01)


@pytest.mark.parametrize("z,q,T", [(1.0, 0.02, 50), (1.5, 0.02, 50), (3.0, 0.1, 100),
                                   (0.8, 0.05, 20)])
def test_basic_conversion_against_the_independent_accountant(z, q, T):
    """The same RDP curve, converted by Lemma 4: within 1% of (and never below) the
    independent accountant's basic conversion on its subset of orders, and never below
    dp-accounting's tighter conversion."""
    delta = 6000 ** -1.1
    ours = accounting.epsilon(z, q, T, delta, accountant="rdp_basic")
    theirs = ind.basic_epsilon(lambda a: ind.poisson_gaussian_rdp(q, z, a), T, delta)
    assert ours <= theirs * (1 + 1e-9)
    assert ours == pytest.approx(theirs, rel=0.01)
    assert ours > accounting.epsilon(z, q, T, delta)


def test_basic_conversion_does_not_give_the_papers_table5():
    """GDPFed's FMNIST setting (q 0.02, T 50, delta 6000^-1.1, the authors' search): the
    paper prints DP-FedAvg's sigma^2 = 2.26 at epsilon 0.5 (Table III / Table 5), which
    dp-accounting's conversion gives (test_table5_dp_fedavg_and_gdpfed_rows); Lemma 4's
    conversion, the one the paper writes, needs 3.44. At Table VII's 0.5x (epsilon 0.25) the
    two give 4.79 and 8.81. Each sigma is checked against the independent accountant: within
    budget, and the search's bracket (tolerance 0.01) at most 3% above the exact sigma."""
    delta = accounting.default_delta(6000)
    for eps, tight, basic in ((0.5, 2.2617, 3.4428), (0.25, 4.7852, 8.8135)):
        for accountant, expected, convert in (("rdp", tight, ind.epsilon),
                                              ("rdp_basic", basic, ind.basic_epsilon)):
            z = accounting.calibrate_noise_multiplier(eps, 0.02, 50, delta, accountant,
                                                      tolerance=0.01)
            assert z * z == pytest.approx(expected, abs=1e-3)
            independent = lambda s: convert(lambda a: ind.poisson_gaussian_rdp(0.02, s, a),
                                            50, delta)
            assert independent(z) <= eps
            assert independent(z / 1.03) > eps


def test_accountants_come_from_one_registry():
    """Issue 78, item 3: the config's accountant names, the RDP ones and what each makes
    and converts are read from ``ACCOUNTANT_REGISTRY``, not from string branches."""
    import numpy as np
    from tff_idp.privacy import accounting as acc
    assert acc.ACCOUNTANTS == tuple(acc.ACCOUNTANT_REGISTRY) == ("rdp", "rdp_basic", "pld")
    assert acc.RDP_ACCOUNTANTS == ("rdp", "rdp_basic")
    assert type(acc.make_accountant("rdp_basic")) is acc.BasicConversionRdpAccountant
    assert type(acc.make_accountant("rdp", "fixed")) is acc.RdpAccountant
    with pytest.raises(ValueError, match="only supported by the RDP accountants"):
        acc.make_accountant("pld", "fixed")
    with pytest.raises(ValueError, match="accountant='moments' is not one of"):
        acc.make_accountant("moments")
    orders = np.asarray(acc.RDP_ORDERS)
    curve = orders * 0.02
    assert acc.epsilon_from_rdp(orders, curve, 1e-5, "rdp_basic") == pytest.approx(
        acc.basic_epsilon(orders, curve, 1e-5)[0])
    assert acc.epsilon_from_rdp(orders, curve, 1e-5, "rdp") < \
        acc.epsilon_from_rdp(orders, curve, 1e-5, "rdp_basic")
