"""scripts/rerun_against_archive.py: a column rerun beside its archived runs, cell by cell
(same seeds, and the spread of every archived seed), and the wall times of the same runs."""
import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "rerun_against_archive.py"
spec = importlib.util.spec_from_file_location("rerun_against_archive", SCRIPT)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)


def _runs(folder: Path, runs):
    for (method, seed), (accuracy, wall) in runs.items():
        run = folder / f"{method}-seed{seed}"
        run.mkdir(parents=True)
        (run / "config.json").write_text("{}")
        (run / "summary.json").write_text(json.dumps({
            "final_test_accuracy": accuracy, "seconds_total": wall, "seconds_wall": wall,
            "seconds_setup": 1.0,
            "seconds_per_round_after_first": wall / 100, "seconds_eval": wall / 10,
            "segments": [{"cpu_seconds": wall}, {"cpu_seconds": wall / 2}],   # resumed once
            "machine": {"host": folder.name}}))
        # a curve ending on the final accuracy, the 10 rounds before it 1 point higher,
        # and rounds without an evaluation
        rows = ["round,test_accuracy"] + [f"{r},{accuracy + 0.01:.4f}" for r in range(1, 12)]
        rows += ["12,", f"13,{accuracy:.4f}"]
        (run / "metrics.csv").write_text("\n".join(rows) + "\n")
    (folder / "report").mkdir()                     # not a run: ignored


def test_cells_spread_and_times(tmp_path, capsys):
    _runs(tmp_path / "a", {("gdpfed", 0): (0.70, 100.0), ("gdpfed", 1): (0.72, 300.0),
                           ("pfa", 0): (0.60, 100.0)})
    _runs(tmp_path / "b", {("gdpfed", 3): (0.74, 50.0)})             # seeds 3-5: spread only
    _runs(tmp_path / "new", {("gdpfed", 0): (0.73, 40.0), ("gdpfed", 1): (0.73, 60.0),
                             ("pfa", 0): (0.65, 50.0), ("pfa", 9): (0.1, 1.0)})
    out = tmp_path / "cmp.json"
    assert mod.main(["--archived", str(tmp_path / "a"), "--archived", str(tmp_path / "b"),
                     "--rerun", str(tmp_path / "new"), "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    g = got["cells"]["gdpfed"]
    assert g["seeds"] == [0, 1] and g["spread_seeds"] == [0, 1, 3]
    assert g["archived_mean"] == pytest.approx(71.0) and g["rerun_mean"] == pytest.approx(73.0)
    assert g["difference"] == pytest.approx(2.0)
    assert g["largest_seed_difference"] == pytest.approx(3.0)
    assert g["spread_mean"] == pytest.approx(72.0) and g["spread_std"] == pytest.approx(2.0)
    assert g["difference_from_spread_mean_in_stds"] == pytest.approx(0.5)
    assert g["inside_archived_range"]                         # 73 in [70, 74]
    assert not got["cells"]["pfa"]["inside_archived_range"]   # 65 outside [60, 60]
    # the last 10 evaluated rounds: 9 at accuracy + 1 point, then the final one
    assert got["last"] == 10
    assert g["last_archived_mean"] == pytest.approx(71.9)
    assert g["last_rerun_mean"] == pytest.approx(73.9)
    assert g["last_spread"] == pytest.approx([70.9, 72.9, 74.9])
    assert g["last_inside_archived_range"]
    # the times of the same runs only: seed 3 (archived) and seed 9 (rerun) left out
    assert got["totals"]["archived"]["seconds_wall"] == pytest.approx(500.0)
    assert got["totals"]["rerun"]["seconds_wall"] == pytest.approx(150.0)
    assert got["ratios"]["seconds_wall"] == pytest.approx(0.3)
    assert got["totals"]["rerun"]["cpu_seconds"] == pytest.approx(225.0)
    assert got["ratios"]["cpu_seconds"] == pytest.approx(0.3)
    assert got["only_rerun"] == ["pfa-seed9"]
    printed = capsys.readouterr().out
    assert "| gdpfed | 0, 1 | 70.00, 72.00 | 73.00, 73.00 | 71.00 -> 73.00 (+2.00) |" in printed
    assert "(0.30x)" in printed and "pfa-seed9" in printed
    assert "CPU seconds 750 -> 225 (0.30x)" in printed
    assert "| gdpfed | 71.90 -> 73.90 (+2.00) | [70.90, 74.90] | yes |" in printed


def test_bad_folders_end_in_one_line_exit_2(tmp_path, capsys):
    _runs(tmp_path / "a", {("gdpfed", 0): (0.7, 1.0)})
    _runs(tmp_path / "new", {("gdpfed", 5): (0.7, 1.0)})
    assert mod.main(["--archived", str(tmp_path / "nope"), "--rerun", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--archived" in err and "nope" in err
    assert mod.main(["--archived", str(tmp_path / "a"), "--rerun", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--rerun" in err
    assert mod.main(["--archived", str(tmp_path / "a"), "--rerun", str(tmp_path / "new"),
                     "--last", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--last" in err
    # a damaged run file: the reports' reader refuses it in one line, naming the file
    summary = tmp_path / "new" / "gdpfed-seed5" / "summary.json"
    summary.write_text(summary.read_text()[:40])
    assert mod.main(["--archived", str(tmp_path / "a"), "--rerun", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("--rerun: ") and str(summary) in err


def test_docs_column_rerun_is_the_committed_comparison():
    """docs/backends.md's "The Table II column rerun": its tables are the script's table of
    the committed JSON, and the costs the page quotes are the JSON's."""
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "backends.md").read_text()
    part = page[page.index("**The Table II column rerun"):].split("\n\n**")[0]
    got = json.loads((root / "runs/bench/2026-12-03-fmnist-table2-column-rerun.json")
                     .read_text())
    assert mod.table(got) in part
    assert f"{len(got['runs'])} of its 18 runs" in part
    flat = " ".join(part.split())
    t, r = got["totals"], got["ratios"]
    assert (f"CPU seconds {t['archived']['cpu_seconds']:,.0f} archived against "
            f"{t['rerun']['cpu_seconds']:,.0f} ({r['cpu_seconds']:.2f}x;") in flat
    assert f"wall time {r['seconds_wall']:.2f}x" in flat
    assert f"a training round {r['seconds_per_round_after_first']:.2f}x" in flat
    assert "--out runs/bench/2026-12-03-fmnist-table2-column-rerun.json" in flat
    for folder in got["folders"]["archived"] + [got["folders"]["rerun"]]:
        assert folder in flat
