import pytest

from tff_idp.privacy import BudgetExceededError, PrivacyLedger, accounting


def _ledger():
    return PrivacyLedger(budgets=[1.0, 1.0, 3.0, 3.0], groups=[0, 0, 1, 1], delta=1e-5)


def test_realised_epsilon_composes_the_rounds_run():
    z0 = accounting.calibrate_noise_multiplier(1.0, 0.1, 20, 1e-5)
    z1 = accounting.calibrate_noise_multiplier(3.0, 0.2, 20, 1e-5)
    led = _ledger()
    for t in range(20):
        led.record_round([(0.1, z0), (0.2, z1)], participants=[0, 2] if t % 2 else [3])
    eps = led.client_epsilons()
    assert eps[0] == pytest.approx(1.0, abs=1e-3) and eps[2] == pytest.approx(3.0, abs=1e-3)
    assert led.participation.tolist() == [10, 0, 10, 10]
    s = led.summary()
    assert s["within_budget"] and s["groups"]["1"]["realised_epsilon"] == pytest.approx(3.0, abs=1e-3)
    # a run stopped half-way has spent less, computed independently
    half = _ledger()
    for _ in range(10):
        half.record_round([(0.1, z0), (0.2, z1)], [])
    assert half.client_epsilons()[0] == pytest.approx(accounting.epsilon(z0, 0.1, 10, 1e-5))


def test_plan_over_budget_is_refused():
    z0 = accounting.calibrate_noise_multiplier(1.0, 0.1, 20, 1e-5)
    z1 = accounting.calibrate_noise_multiplier(3.0, 0.2, 20, 1e-5)
    led = _ledger()
    led.check_plan([[(0.1, z0), (0.2, z1)]] * 20)           # exactly the plan: accepted
    with pytest.raises(BudgetExceededError, match="group 0 exceeds its budget 1"):
        led.check_plan([[(0.1, z0), (0.2, z1)]] * 25)       # five rounds too many
    with pytest.raises(BudgetExceededError, match="group 1"):
        led.check_plan([[(0.1, z0), (0.3, z1)]] * 20)       # group 1 sampled too often


def test_varying_rounds_are_composed_in_order():
    led = PrivacyLedger(budgets=[5.0], groups=[0], delta=1e-5)
    led.record_round([(0.1, 1.0)], [0])
    led.record_round([(0.2, 2.0)], [])
    led.record_round([(0.2, 2.0)], [0])
    acc = accounting.make_accountant()
    acc.compose(accounting.round_event(1.0, 0.1))
    acc.compose(accounting.round_event(2.0, 0.2), 2)
    assert led.client_epsilons()[0] == pytest.approx(acc.get_epsilon(1e-5))
