"""A table's [[claims]]: parsed with one-line errors, checked by the verdict rule of
tff_idp/harness/claims.py, and written into the report beside the results."""
import csv
import json
import math

import pytest

from tff_idp.config import ConfigError
from tff_idp.harness import claims
from tff_idp.harness.table import expand, load_table

from .conftest import tiny_table

CLAIMS = '''
[[claims]]
text = "DP-FedAvg below P-FedAvg"
paper = "somewhere"
cells = ["digits / 1x / dp_fedavg", "digits / 1x / p_fedavg"]

[[claims]]
text = "P-FedAvg steadier at 1x than at 2x"
cells = ["digits / 2x / p_fedavg", "digits / 1x / p_fedavg"]
order = "decreasing"
statistic = "late_spread"
'''


def _unpaired(values, first=0):
    return {first + i: v for i, v in enumerate(values)}


def _pairs_verdict(a, b, order="increasing"):
    """Cells run with different seeds: independent means."""
    return claims.verdict([claims._pair(_unpaired(a), _unpaired(b, 10), order)])


def test_the_verdict_rule():
    # gap +10 with 2 SE = 2 * sqrt(1/3 + 1/3) = 1.63: holds
    assert _pairs_verdict([49, 50, 51], [59, 60, 61]) == claims.HOLDS
    # gap +1 inside 2 SE: holds on the means only
    assert _pairs_verdict([49, 50, 51], [50, 51, 52]) == claims.HOLDS_WITHIN_NOISE
    assert _pairs_verdict([50, 51, 52], [49, 50, 51]) == claims.REVERSED_WITHIN_NOISE
    assert _pairs_verdict([59, 60, 61], [49, 50, 51]) == claims.FAILS
    assert _pairs_verdict([59, 60, 61], [49, 50, 51], "decreasing") == claims.HOLDS
    assert _pairs_verdict([50], [60]) == "holds (1 seed)"
    assert _pairs_verdict([60], [50]) == "does not hold (1 seed)"
    # a chain holds only when every consecutive pair does
    pairs = [claims._pair(_unpaired([1, 2, 3]), _unpaired([11, 12, 13], 10), "increasing"),
             claims._pair(_unpaired([11, 12, 13]), _unpaired([5, 6, 7], 10), "increasing")]
    assert claims.verdict(pairs) == claims.FAILS
    # a chain with a one-seed cell: that pair by its sign, the others by their SE (paper
    # 004's Table I with 100-0-0 at one seed: +1.93 alone, -0.83 within 2 SE 4.31)
    within = claims._pair(_unpaired([50, 51, 52]), _unpaired([49, 50, 51], 10), "increasing")
    alone = claims._pair(_unpaired([50]), _unpaired([52], 10), "increasing")
    clear = claims._pair(_unpaired([1, 2, 3]), _unpaired([11, 12, 13], 10), "increasing")
    assert claims.verdict([alone, within]) == claims.REVERSED_WITHIN_NOISE + " (1 seed)"
    assert claims.verdict([alone, clear]) == "holds (1 seed)"
    assert claims.verdict([alone, pairs[1]]) == "does not hold (1 seed)"
    below = claims._pair(_unpaired([52]), _unpaired([50], 10), "increasing")
    assert claims.verdict([below, clear]) == "does not hold (1 seed)"


def test_cells_with_the_same_seeds_are_compared_seed_by_seed():
    # a large spread between seeds, a steady +0.5 within each: holds when paired
    a, b = [40.0, 60.0, 80.0], [40.5, 60.6, 80.4]
    d, two_se, by_seed = claims._pair(_unpaired(a), _unpaired(b), "increasing")
    assert d == pytest.approx(0.5) and two_se == pytest.approx(2 * 0.1 / 3 ** 0.5)
    assert by_seed == pytest.approx({0: 0.5, 1: 0.6, 2: 0.4})
    assert claims._pair(_unpaired(a), _unpaired(b, 10), "increasing")[2] is None
    assert claims.verdict([(d, two_se)]) == claims.HOLDS
    assert _pairs_verdict(a, b) == claims.HOLDS_WITHIN_NOISE      # unpaired: within noise


def test_late_spread_is_the_std_of_late_round_to_round_changes():
    steady = [10, 20, 30, 40, 41, 42, 43, 44]
    jumpy = [10, 20, 30, 40, 50, 40, 50, 40]
    assert claims.late_spread(steady) == 0.0
    assert claims.late_spread(jumpy) == pytest.approx(float(
        __import__("numpy").std([-10, 10, -10], ddof=1)))
    assert math.isnan(claims.late_spread([1, 2, 3]))        # too short to say


@pytest.mark.parametrize("bad, message", [
    ('cells = ["digits / 1x / fedprox", "digits / 1x / p_fedavg"]', "no method 'fedprox'"),
    ('cells = ["mnist / 1x / dp_fedavg", "digits / 1x / p_fedavg"]', "no data set 'mnist'"),
    ('cells = ["digits / dp_fedavg", "digits / 1x / p_fedavg"]', "this table has columns"),
    ('cells = ["digits / 1x / dp_fedavg"]', "at least two cells"),
    ('cells = ["digits / 1x / dp_fedavg", "digits / 1x / p_fedavg"]\norder = "up"',
     "claims[0].order='up'"),
    ('cells = ["digits / 1x / dp_fedavg", "digits / 1x / p_fedavg"]\nstatistic = "best"',
     "claims[0].statistic='best'"),
    ('cells = ["digits / 1x / dp_fedavg", "digits / 1x / p_fedavg"]\nwhy = 1',
     "claims[0].why=1: unknown key"),
])
def test_a_bad_claim_is_one_line_naming_its_key(tmp_path, bad, message):
    path = tiny_table(tmp_path)
    path.write_text(path.read_text() + f'\n[[claims]]\ntext = "x"\n{bad}\n')
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")) as e:
        load_table(str(path))
    assert "\n" not in str(e.value)


def _fake(unit, accuracy, curve, averaged=None):
    from tff_idp.engine.fingerprint import run_fingerprint
    unit.folder.mkdir(parents=True)
    (unit.folder / "config.json").write_text(json.dumps(
        {"fingerprint": run_fingerprint(unit.cfg, unit.method)}))
    (unit.folder / "summary.json").write_text(json.dumps(
        {"final_test_accuracy": accuracy, "seconds_total": 2.0}))
    fields = ["round", "test_accuracy"] + (["averaged_model_test_accuracy"] if averaged else [])
    with open(unit.folder / "metrics.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for i, a in enumerate(curve):
            w.writerow({"round": i + 1, "test_accuracy": a,
                        **({"averaged_model_test_accuracy": averaged} if averaged else {})})
    (unit.folder / "ledger.csv").write_text("client,group,budget,participations,epsilon\n")


def test_the_report_checks_the_claims_and_shows_the_averaged_model(tmp_path):
    from tff_idp.report import write_report
    path = tiny_table(tmp_path, seeds=3)
    path.write_text(path.read_text().replace("rounds = 3", "rounds = 6") + CLAIMS)
    spec = load_table(str(path))
    assert [c.text for c in spec.claims] == ["DP-FedAvg below P-FedAvg",
                                            "P-FedAvg steadier at 1x than at 2x"]
    for u in expand(spec, "paper"):
        if u.method == "p_fedavg":
            curve = ([0.5, 0.6, 0.7, 0.71, 0.72, 0.73] if u.column == "1x" else
                     [0.5, 0.6, 0.7, 0.6, 0.7, 0.6])
            _fake(u, 0.80 + 0.01 * u.seed, curve, averaged=0.4)
        elif u.column == "1x":
            _fake(u, 0.60 + 0.01 * u.seed, [0.5, 0.6, 0.6, 0.6, 0.6, 0.6])
    md_path = write_report(spec, "paper")
    md = md_path.read_text()
    rows = list(csv.DictReader(open(md_path.parent / "claims.csv")))
    assert [r["verdict"] for r in rows] == [claims.HOLDS, claims.HOLDS]
    assert rows[0]["ours"] == "dp_fedavg: 61.00 ± 1.00% (n=3); p_fedavg: 81.00 ± 1.00% (n=3)"
    assert rows[0]["gaps"] == "+20.00 (2 SE 0.00)"        # paired by seed: every gap is 20
    assert rows[0]["seed_by_seed"] == "seed 0 +20.00, seed 1 +20.00, seed 2 +20.00"
    assert "## The paper's claims, checked" in md and "| DP-FedAvg below P-FedAvg | somewhere |" in md
    # what the terminal shows (run's end, report): the results table, then the claims
    from tff_idp.report import main_table
    from tff_idp.report.document import CLAIMS_HEADING
    shown = main_table(md).splitlines()
    assert shown[0].startswith("Scale `paper`: 9 of 12 runs complete")
    results = md.split("complete. Each cell")[1].split("\n\n")[1].splitlines()
    assert shown[2:2 + len(results)] == results and results[0].startswith("| ")
    assert shown[2 + len(results):] == ["", "The paper's claims, checked:", ""] + \
        md.split(CLAIMS_HEADING)[1].split("\n\n")[2].splitlines()
    assert shown[-1].startswith("| P-FedAvg steadier at 1x than at 2x |")
    # the averaged model: only methods that have it, its last value
    section = md.split("## The averaged model")[1].split("##")[0]
    assert "| digits | p_fedavg | 40.00 ± 0.00 | 40.00 ± 0.00 |" in section
    assert "dp_fedavg" not in section
    # a cell with no complete run: not run
    for u in expand(spec, "paper"):
        if u.method == "dp_fedavg" and u.folder.exists():
            for f in u.folder.glob("*"):
                f.unlink()
            u.folder.rmdir()
    write_report(spec, "paper")
    rows = list(csv.DictReader(open(md_path.parent / "claims.csv")))
    assert rows[0]["verdict"] == claims.NOT_RUN


def test_client_final_compares_personalised_and_global_models_on_the_clients_classes():
    personalised = {"seeds": [0, 1], "acc": [70.0, 72.0], "curves": [],
                    "metric": "personal_test_accuracy", "averaged": {0: 9.0, 1: 11.0}}
    global_model = {"seeds": [0, 1], "acc": [10.0, 12.0], "curves": [],
                    "metric": "test_accuracy", "client": {0: 30.0, 1: 33.0}}
    assert claims.values(personalised, "client_final") == {0: 70.0, 1: 72.0}
    assert claims.values(global_model, "client_final") == {0: 30.0, 1: 33.0}
    assert claims.values(global_model, "final") == {0: 10.0, 1: 12.0}
    # a global model never tested client by client: nothing to compare, so "not run"
    assert claims.values(dict(global_model, client={}), "client_final") == {}


def test_the_report_shows_the_global_model_on_each_clients_classes(tmp_path):
    from tff_idp.report import write_report
    path = tiny_table(tmp_path, seeds=2)
    spec = load_table(str(path))
    for u in expand(spec, "paper"):
        _fake(u, 0.8, [0.5, 0.6, 0.8])
        if u.method == "p_fedavg":           # as Method.client_tests writes it
            rows = list(csv.DictReader(open(u.folder / "metrics.csv")))
            with open(u.folder / "metrics.csv", "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=["round", "test_accuracy",
                                                  "client_test_accuracy"])
                w.writeheader()
                for r in rows:
                    w.writerow(dict(r, client_test_accuracy=0.25 + 0.01 * u.seed))
    md = write_report(spec, "paper").read_text()
    section = md.split("## The global model on each client's classes")[1].split("##")[0]
    assert "| digits | p_fedavg | 25.50 ± 0.71 | 25.50 ± 0.71 |" in section
    assert "dp_fedavg" not in section
