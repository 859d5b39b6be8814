"""A report of runs that measured their clients' statistics in the simulator
(``simulation_diagnostics``) gives each run's mean over its last rounds; a report of runs
without them has no such section."""
import csv
import json

from tff_idp.engine.fingerprint import run_fingerprint
from tff_idp.harness.table import expand, load_table
from tff_idp.privacy.threat_model import diagnostic_columns


def _result(unit, rows):
    unit.folder.mkdir(parents=True)
    (unit.folder / "config.json").write_text(json.dumps(
        {"fingerprint": run_fingerprint(unit.cfg, unit.method)}))
    (unit.folder / "summary.json").write_text(json.dumps(
        {"final_test_accuracy": rows[-1]["test_accuracy"], "seconds_total": 2.0}))
    with open(unit.folder / "metrics.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (unit.folder / "ledger.csv").write_text("client,group,budget,participations,epsilon\n")


def test_simulated_client_statistics_are_averaged_over_each_runs_last_ten_rounds(table):
    from tff_idp.report import write_report
    table.write_text(table.read_text().replace("rounds = 3", "rounds = 12"))
    spec = load_table(str(table))
    sim = diagnostic_columns("simulation")
    assert sorted(sim.values()) == ["sim_clipped_fraction", "sim_mean_update_norm",
                                    "sim_train_loss"]
    units = expand(spec, "paper")
    for u in units:
        if u.method == "dp_fedavg" and u.column == "1x":
            # 12 rounds: the first two (norm 100) are outside the window of the last ten
            _result(u, [{"round": r, "test_accuracy": 0.5,
                         "sim_mean_update_norm": 100.0 if r <= 2 else r + u.seed,
                         "sim_clipped_fraction": 0.25, "sim_train_loss": ""}
                        for r in range(1, 13)])
        else:
            _result(u, [{"round": r, "test_accuracy": 0.5} for r in range(1, 13)])
    md = write_report(spec, "paper").read_text()
    section = md[md.index("## Client statistics measured in the simulator only"):]
    assert "| digits | 1x | dp_fedavg | 0 | 0.25 | 7.5 | - |" in section     # mean of 3..12
    assert "| digits | 1x | dp_fedavg | 1 | 0.25 | 8.5 | - |" in section
    assert "clipped_fraction | mean_update_norm | train_loss |" in section
    assert section.count("| digits |") == 2                   # no run without the columns

    for u in units:
        if u.method == "dp_fedavg" and u.column == "1x":
            (u.folder / "metrics.csv").write_text(
                "round,test_accuracy\n" + "".join(f"{r},0.5\n" for r in range(1, 13)))
    assert "Client statistics" not in write_report(spec, "paper").read_text()
