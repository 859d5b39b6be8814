"""MS-PAFL's closed-form bounds (paper 002) against hand-computed values, and against the RDP
accounting of the same per-client mechanism where the paper's Theorem 3 is supposed to be
looser (it is not: it is below)."""
import math

import pytest

from tff_idp.privacy import mspafl

D_L = 1e-4


def test_lemma1_sigma_by_hand():
    # 2C sqrt(2 ln(1.25 / 1e-4)) / eps_l, ln(12500) = 9.43348
    assert mspafl.local_noise_std(1.0, D_L, 1.0) == pytest.approx(2 * math.sqrt(2 * 9.433484), 1e-6)
    assert mspafl.local_noise_std(1.0, D_L, 1.0) == pytest.approx(8.6872, abs=1e-4)
    assert mspafl.local_noise_std(0.5, D_L, 1.0) == pytest.approx(17.3744, abs=1e-4)
    assert mspafl.local_noise_std(1.0, D_L, 1.0, sensitivity_factor=1.0) == pytest.approx(4.3436,
                                                                                         abs=1e-4)


@pytest.mark.parametrize("steps,batch,wor,wr", [
    (5, 13, 0.2, 1 - (324 / 325) ** 65), (5, 5, 25 / 325, 1 - (324 / 325) ** 25),
    (5, 1, 5 / 325, 1 - (324 / 325) ** 5)])
def test_subsample_rates(steps, batch, wor, wr):
    assert mspafl.subsample_rate(325, steps, batch, "wor") == pytest.approx(wor)
    assert mspafl.subsample_rate(325, steps, batch, "wr") == pytest.approx(wr)
    assert mspafl.subsample_rate(325, steps, batch, "wr") < mspafl.subsample_rate(
        325, steps, batch, "wor")


def test_wor_refuses_more_draws_than_records():
    with pytest.raises(ValueError, match="65 > 60"):
        mspafl.subsample_rate(60, 5, 13, "wor")
    with pytest.raises(ValueError, match="data_sampling='x'"):
        mspafl.subsample_rate(60, 5, 1, "x")


@pytest.mark.parametrize("p,q,eps_l,expect", [
    # the notes' Fig. 3 table (N = 100, beta = 0.25)
    (0.1, 0.2, 1.0, 0.0480), (0.5, 0.2, 0.4, 0.0832), (1.0, 0.2, 0.6, 0.2400),
    (0.5, 0.3, 1.0, 0.3443), (0.5, 0.5, 0.1, 0.0512), (0.5, 0.2, 1.0, 0.21987)])
def test_corollary1_round_epsilon(p, q, eps_l, expect):
    assert mspafl.round_epsilon(p, q, eps_l, 100) == pytest.approx(expect, abs=6e-5)


def test_per_client_rates_take_the_worst_client_and_delta_by_hand():
    d = 2 * math.exp(-2 * 0.25 ** 2 * 100)
    assert mspafl.hoeffding_delta(100) == pytest.approx(7.4533e-6, rel=1e-4)
    assert mspafl.round_delta(0.5, 0.2, D_L, 100) == pytest.approx(d + 0.1 * D_L / (1 - d))
    mixed = mspafl.round_epsilon([0.1, 0.5, 0.3], [0.2, 0.2, 0.5], 1.0, 100)
    assert mixed == pytest.approx(mspafl.round_epsilon(0.3, 0.5, 1.0, 100))
    assert mspafl.checkin_normaliser(0.1, 100) == pytest.approx(1 - 0.9 ** 100)
    assert mspafl.checkin_normaliser([0.5, 0.5]) == pytest.approx(0.75)


def test_theorem3_and_its_constant():
    assert mspafl.theorem3_constant(D_L, 1.0) == pytest.approx(0.49405, abs=1e-5)
    # q = 0.2, eps_l = 1, p T = 100: 0.49405 * 0.2 * sqrt(100 / 0.8)
    assert mspafl.client_epsilon(0.2, 1.0, 1.0, 100, D_L, 1.0) == pytest.approx(
        0.49405 * 0.2 * math.sqrt(125), rel=1e-4)
    ratio = (mspafl.client_epsilon(0.0741, 0.1, 0.5, 50, D_L, 1.0) /
             mspafl.client_epsilon(0.0769, 0.1, 0.5, 50, D_L, 1.0))
    assert ratio == pytest.approx(mspafl.client_epsilon(0.0741, 1.0, 0.5, 50, D_L, 1.0) /
                                  mspafl.client_epsilon(0.0769, 1.0, 0.5, 50, D_L, 1.0))
    with pytest.raises(ValueError, match="q=1"):
        mspafl.client_epsilon(1.0, 1.0, 1.0, 10, D_L, 1.0)


def test_theorem4_returns_the_total_delta():
    eps_r = mspafl.round_epsilon(0.5, 0.2, 1.0, 100)
    delta_r = mspafl.round_delta(0.5, 0.2, D_L, 100)
    eps, delta = mspafl.global_epsilon(eps_r, delta_r, 10, D_L)
    assert eps == pytest.approx(math.sqrt(20 * math.log(1e4)) * eps_r
                                + 10 * eps_r * math.expm1(eps_r))
    assert delta == pytest.approx(2.75e-4, rel=2e-3)
    assert mspafl.global_epsilon(eps_r, delta_r, 100, D_L)[1] == pytest.approx(1.85e-3, rel=3e-3)


def test_rdp_cross_check_is_above_the_papers_theorem3():
    """The same per-client mechanism by dp-accounting (z = sigma / 2C): WOR replace-one and
    Poisson; both exceed Theorem 3's 1.105 at q = 0.2, eps_l = 1, 100 participations."""
    sigma = mspafl.local_noise_std(1.0, D_L, 1.0)
    wor = mspafl.rdp_client_epsilon(sigma, 1.0, 100, D_L, "wor", num_examples=325,
                                    sample_size=65)
    poisson = mspafl.rdp_client_epsilon(sigma, 1.0, 100, D_L, "poisson", rate=0.2)
    paper = mspafl.client_epsilon(0.2, 1.0, 1.0, 100, D_L, 1.0)
    assert wor == pytest.approx(3.958, abs=2e-3) and poisson == pytest.approx(1.799, abs=2e-3)
    assert paper < poisson < wor
    assert mspafl.rdp_client_epsilon(sigma, 1.0, 100, D_L, "wr") is None
    assert "no accountant" in mspafl.WR_NO_ACCOUNTANT


@pytest.mark.parametrize("p,rounds,expect", [(0.5, 1, 0.187), (0.5, 10, 0.629),
                                             (0.5, 100, 2.236), (0.1, 100, 0.374)])
def test_client_level_checkin_reading(p, rounds, expect):
    sigma = mspafl.local_noise_std(1.0, D_L, 1.0)
    assert mspafl.checkin_rdp_epsilon(p, sigma, 1.0, rounds, D_L) == pytest.approx(expect,
                                                                                  abs=1.5e-3)


@pytest.mark.parametrize("call", [
    lambda: mspafl.local_noise_std(0.0, D_L, 1.0), lambda: mspafl.local_noise_std(1.0, 1.0, 1.0),
    lambda: mspafl.round_epsilon(1.5, 0.2, 1.0, 100), lambda: mspafl.round_epsilon(0.5, 0.2,
                                                                                  -1.0, 100),
    lambda: mspafl.global_epsilon(0.1, 1e-5, 0, D_L)])
def test_bad_arguments_are_refused(call):
    with pytest.raises(ValueError):
        call()
