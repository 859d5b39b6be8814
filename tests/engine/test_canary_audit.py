"""The canary audit (issue 38) end to end on the default digits setting: canaries go through
the fast backend's clip, noise and sum; their scores give Steinke et al.'s lower bound, which
must stay below the ledger's epsilon for the real mechanism and catch a broken one. Local
learning rate 0.001: the clients' own updates are small, so the canaries stand out as much as
they can (the auditor's best case)."""
import dataclasses

import numpy as np
import pytest

from tff_idp import experiment_config
from tff_idp.audit import best_lower_bound, guesses, lower_bound
from tff_idp.audit.bounds import ceiling
from tff_idp.engine.experiment import prepare
from tff_idp.engine.loop import run_method

CANARIES = 400


def _audit(seed=0, noise_scale=1.0, canaries=CANARIES, shares="each"):
    cfg = experiment_config.load(None, ['methods=["dp_fedavg"]', 'backend="fast"', f"seed={seed}",
                             f"audit_canaries={canaries}", "local_lr=0.001",
                             f'fast_noise_shares="{shares}"'])
    exp = prepare(cfg)
    plan = exp.plans["dp_fedavg"]
    exp.plans["dp_fedavg"] = dataclasses.replace(
        plan, noise_stddevs=[s * noise_scale for s in plan.noise_stddevs])
    rows, summary, ledger = run_method(exp, "dp_fedavg", progress=False)
    return summary.audit, ledger


def test_without_noise_every_guess_about_a_canary_that_took_part_is_right():
    """An inserted canary that the group's sampling never picked changed nothing: no auditor
    can tell it from one never inserted (that is the sampling's share of the privacy). Every
    other guess is right, and the bound is what the guess count gives."""
    audit, ledger = _audit(noise_scale=0.0)
    best = audit["every_round"]["lower_bound"]
    scores = audit["canary_scores"]
    took_part = np.asarray(scores["inserted"]) & (np.asarray(scores["participations"]) > 0)
    k = best["guesses"] // 2
    assert guesses(scores["every_round"], took_part, k, k) == (2 * k, 2 * k)
    assert best["guesses"] >= 100
    assert best["guesses"] - best["correct"] <= audit["inserted_never_sampled"]
    assert best["epsilon"] == pytest.approx(
        lower_bound(CANARIES, best["guesses"], best["correct"], ledger.delta,
                    best["per_test_confidence"]))
    assert best["per_test_confidence"] == pytest.approx(0.99)    # 95% over five counts
    # at the run's delta of 1.07e-3 (2 m delta = 0.86) no audit with 400 canaries can show
    # more than 0.60: the noise-free mechanism is caught above its claimed 0.5, near that cap
    assert best["ceiling"] == pytest.approx(ceiling(CANARIES, ledger.delta))
    assert 0.5 < best["epsilon"] <= best["ceiling"] < 0.61
    assert best["verdict"] == "leak detected"
    lo, hi = audit["every_round"]["one_shot_interval"]
    assert lo <= audit["every_round"]["one_shot_estimate"] <= hi


@pytest.mark.parametrize("seed", range(5))
def test_the_real_mechanism_stays_below_its_ledger_at_99_percent(seed):
    audit, _ = _audit(seed)
    scores = audit["canary_scores"]
    for key in ("final_model", "every_round"):
        bound = best_lower_bound(scores[key], scores["inserted"], audit["delta"], 0.99)
        assert bound["epsilon"] < audit["ledger_epsilon"] == pytest.approx(0.5, abs=1e-6)


def test_with_summed_shares_the_canaries_noise_is_in_the_one_draw():
    """``fast_noise_shares="summed"``: the canaries' shares are drawn in the group's one sum
    with the clients' (docs/backends.md): the real mechanism stays below its ledger."""
    audit, _ = _audit(canaries=100, shares="summed")
    assert audit["inserted"] > 0
    assert audit["every_round"]["lower_bound"]["epsilon"] < audit["ledger_epsilon"]


def test_a_mechanism_with_a_tenth_of_its_noise_is_caught():
    """With 100 canaries, where the family-wise ceiling at this delta is highest (0.80;
    0.60 with 400): the bound clears the claimed 0.5."""
    audit, _ = _audit(noise_scale=0.1, canaries=100)
    assert audit["every_round"]["lower_bound"]["epsilon"] > audit["ledger_epsilon"]
    assert audit["every_round"]["lower_bound"]["verdict"] == "leak detected"
    assert 0 < audit["inserted"] < 100 == audit["canaries"]
