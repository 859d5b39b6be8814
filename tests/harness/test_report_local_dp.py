"""MS-PAFL's reports say what each observer gets (issue 75, item 4): the covering epsilon
for the server and the global model's viewers, "not private" for whoever sees a
personalised model, and the averaged model marked †."""
from pathlib import Path

from tff_idp.methods.mspafl import observers, protects_against
from tff_idp.report.tables import local_dp_observer_rows

ROOT = Path(__file__).resolve().parents[2]


def _privacy(covering, persistent, old_format=False):
    guarantee = {"table_epsilon_covers": not persistent}
    if not old_format:
        guarantee.update(observers=observers(persistent),
                         protects_against=protects_against(persistent))
    return {"covering_epsilon_max": covering, "guarantee": guarantee,
            "server_epsilon_text": f"{covering:.3g} covering (rdp, no amplification, delta "
                                   "0.0001)", "table_epsilon": "2.89 (Thm 4, delta 0.0011)"}


def test_one_row_per_cell_with_the_worst_seed_and_the_personalised_observer():
    cells = {("D", "p=0.1", "ms_pafl"): {"local_dp": [_privacy(4.2, True),
                                                      _privacy(4.7, True, old_format=True)]},
             ("D", "baseline", "ldp_fedavg"): {"local_dp": [_privacy(11.5, False)]},
             ("D", "x", "gdpfed"): {"local_dp": [], "observers": []}}
    rows = local_dp_observer_rows(cells)
    assert [r["method"] for r in rows] == ["ms_pafl", "ldp_fedavg"]
    assert rows[0]["eps_server_and_global_model_viewers"].startswith("4.7 covering")
    assert rows[0]["eps_personalised_model_viewers"] == "not private"
    assert rows[1]["eps_personalised_model_viewers"].startswith("no personalised model")


def test_both_committed_ms_pafl_reports_carry_the_privacy_section():
    for name in ("figure2", "ldp-fedavg-noise"):
        text = (ROOT / "runs/ms_pafl/reports/fmnist" / name / "report.md").read_text()
        section = text.split("## Privacy, by observer", 1)
        assert len(section) == 2, name
        assert "eps_personalised_model_viewers" in section[1]
    figure2 = (ROOT / "runs/ms_pafl/reports/fmnist/figure2/report.md").read_text()
    assert "## The averaged model †" in figure2
    assert "| not private |" in figure2
    for line in figure2.splitlines():          # every claim on the averaged model: marked
        if line.startswith("|") and "averaged model" in line:
            assert "averaged model †" in line or "averaged model's accuracy" in line, line
            assert "† not private" in line, line
