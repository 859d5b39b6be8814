"""The report's convergence figure (issue 59 item 5): a panel of more than 5 curves is split
into panels of at most 4, one colour per curve across the panels; the round a table reports
(best validation, paper 001's protocol) survives curves.csv and is marked on the curve."""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from tff_idp.harness.table import load_table  # noqa: E402
from tff_idp.report import figures, runs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ABLATIONS = ROOT / "runs" / "dp_pfeddsu" / "fmnist" / "ablations.toml"


def _cells(spec):
    """One seed per column of the ablation table: a rising curve of 50 rounds whose best
    validation round is 30 (so the reported value, 30, lies above the last, 25)."""
    curve = [float(r) for r in range(1, 31)] + [25.0] * 20
    return {("FMNIST s=5", col, "dp_pfeddsu"): {
        "curves": [curve], "seeds": [0], "reported_rounds": [30], "metric":
        "personal_test_accuracy", "not_covered": set(), "notes": set()}
        for col in spec.axis.labels}


def test_more_than_five_curves_are_split_into_panels_of_at_most_four():
    spec = load_table(str(ABLATIONS))
    assert len(spec.axis.labels) == 7
    pairs = [(col, "dp_pfeddsu") for col in spec.axis.labels]
    parts = figures._split_panel("FMNIST s=5", "FMNIST s=5", pairs)
    assert [p for _, _, part in parts for p in part] == pairs        # all, in table order
    assert [len(part) for _, _, part in parts] == [4, 3]
    assert [title for _, title, _ in parts] == ["FMNIST s=5 (1/2)", "FMNIST s=5 (2/2)"]
    six = figures._split_panel("t", "FMNIST", pairs[:6])
    assert [len(part) for _, _, part in six] == [3, 3]
    assert figures._split_panel("t", "FMNIST", pairs[:5]) == [("FMNIST", "t", pairs[:5])]


def test_the_reported_round_survives_curves_csv_and_is_drawn(tmp_path, monkeypatch):
    spec = load_table(str(ABLATIONS))
    cells = _cells(spec)
    rows = runs.curve_rows(cells)
    assert {r["reported"] for r in rows} == {1, ""}
    assert sum(r["reported"] == 1 for r in rows) == 7
    runs.write_csv(tmp_path / "curves.csv", rows)
    back = runs.cells_from_curves(tmp_path / "curves.csv", spec)
    assert all(c["reported_rounds"] == [30] for c in back.values())
    drawn = []
    real = figures._reported_points

    def spy(ax, cell, color):
        out = real(ax, cell, color)
        if ax is not None:
            drawn.append((out, ax.lines[-1].get_xydata().tolist()))
        return out
    monkeypatch.setattr(figures, "_reported_points", spy)
    path = figures.plot_convergence(spec, back, tmp_path / "c.png", "paper")
    assert path.read_bytes()[:4] == b"\x89PNG"
    assert len(drawn) == 7 and all(ok and xy == [[30.0, 30.0]] for ok, xy in drawn)


def test_a_table_without_validation_keeps_its_curves_csv_columns():
    spec = load_table(str(ABLATIONS))
    cells = _cells(spec)
    for c in cells.values():
        c["reported_rounds"] = [None]
    assert "reported" not in runs.curve_rows(cells)[0]


def test_replot_refuses_a_table_that_draws_no_convergence_figure(tmp_path, capfd):
    from tff_idp import report
    canaries = ROOT / "runs" / "gdpfed" / "ablations" / "fmnist-table2-canaries.toml"
    assert "convergence" not in load_table(str(canaries)).figures
    status = report.main([str(canaries), "--scale", "paper", "--replot", "--report-dir",
                          str(tmp_path)])
    err = [line for line in capfd.readouterr().err.splitlines() if line.strip()]
    assert status == 2 and len(err) == 1 and "--replot" in err[0] and "figures = []" in err[0]
    assert list(tmp_path.iterdir()) == []
