"""Who may see what a run folder stores (issue 75, item 5): metrics.csv, the released
curve, holds no cohort size (the model viewers' epsilon assumes the cohort secret);
server.csv holds them; observers.json names an observer for every file and every column;
read_run joins the two tables back into the rows the run had in memory."""
import csv
import json
from pathlib import Path

import pytest

import tff_idp
from tff_idp.privacy import threat_model

SMALL = {"methods": ["gdpfed"], "rounds": 2, "num_clients": 60, "backend": "fast"}
ROOT = Path(__file__).resolve().parents[2]


def _header(path):
    with open(path, newline="") as f:
        return next(csv.reader(f))


def test_cohort_sizes_are_kept_out_of_the_released_curve(tmp_path):
    exp = tff_idp.Experiment.from_dict(SMALL)
    folder = tmp_path / "gdpfed-seed0"
    run = exp.run("gdpfed", folder=folder)
    metrics, server = _header(folder / "metrics.csv"), _header(folder / "server.csv")
    assert not set(threat_model.SERVER_COLUMNS) & set(metrics)
    assert server == ["round", "cohort", "cohort_per_group"]
    observers = json.loads((folder / "observers.json").read_text())
    assert set(observers["metrics.csv"]) == set(metrics)
    assert set(observers["server.csv"]) == set(server)
    assert observers["server.csv"]["cohort_per_group"].startswith("server only")
    assert {"ledger.csv", "config.json", "summary.json"} <= set(observers)
    # every file the run wrote is named
    assert {p.name for p in folder.iterdir()} <= set(observers) | {"convergence.png"}
    again = tff_idp.read_run(folder)
    # the same rows, cohort sizes included (compared as JSON: NaN equals NaN there)
    assert json.dumps(again.rows, sort_keys=True) == json.dumps(run.rows, sort_keys=True)


def test_every_column_any_archived_run_wrote_has_a_declared_observer():
    """So a new column cannot reach a run folder unclassified: column_observer refuses an
    unknown one, and every column in runs/archive is known."""
    columns = set()
    for path in (ROOT / "runs/archive").rglob("metrics.csv"):
        columns.update(_header(path))
    assert {"test_accuracy", "cohort", "personal_test_accuracy"} <= columns
    for c in columns:
        assert threat_model.column_observer(c)
    with pytest.raises(KeyError, match="column='gradient_norm'"):
        threat_model.column_observer("gradient_norm")
