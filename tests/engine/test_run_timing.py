"""Where a run's time goes: each round's training and evaluation in metrics.csv, the set-up
and the wall time in the summary (what the tables' cost lines add up)."""
import csv
import json
import time

import pytest


def test_the_summary_accounts_for_training_evaluation_and_set_up(tmp_path):
    from tff_idp import config
    from tff_idp.engine.experiment import prepare
    from tff_idp.engine.persist import train_to_folder
    exp = prepare(config.load(None, ['methods=["p_fedavg"]', "rounds=3", "num_clients=30",
                                     "eval_every=2", 'backend="fast"']))
    # as the harness does: the clock started before the data were prepared (5 s here)
    summary = train_to_folder(exp, "p_fedavg", tmp_path / "run", progress=False,
                              started=time.perf_counter() - 5.0)
    with open(tmp_path / "run" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    # rounds 2 and 3 are evaluated (every 2nd, and the last); round 1 has blank columns
    assert [r["test_accuracy"] != "" for r in rows] == [False, True, True]
    assert rows[0]["eval_seconds"] == "" and all(float(r["eval_seconds"]) > 0 for r in rows[1:])
    train = sum(float(r["seconds"]) for r in rows)
    evals = sum(float(r["eval_seconds"]) for r in rows[1:])
    assert summary["seconds_total"] == pytest.approx(train, abs=1e-3)
    assert summary["seconds_eval"] == pytest.approx(evals, abs=1e-3)
    assert summary["seconds_setup"] >= 5.0
    assert summary["seconds_wall"] == pytest.approx(
        train + evals + summary["seconds_setup"], abs=1e-3)
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == summary
