"""The README's status table is generated (tff_idp/report/status.py): the README holds
exactly what ``python -m tff_idp.report --status`` prints, its counts follow the stated rule,
archived runs are read where they lie, and a number without evidence is refused."""
from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tff_idp.errors import ConfigError
from tff_idp.report import status

ROOT = Path(__file__).resolve().parents[2]
SHAKESPEARE = "runs/gdpfed/ablations/shakespeare-table2-seed0.toml"
SHAKESPEARE_REPORT = "runs/gdpfed/reports/shakespeare-table2-seed0"


def test_readme_holds_the_generated_status_table():
    block = status.status_markdown(ROOT)
    readme = (ROOT / "README.md").read_text()
    assert status.readme_block(readme) == block, (
        "README.md's status table differs from python -m tff_idp.report --status; "
        "regenerate it with --status --write")


def test_status_command_prints_the_table_and_refuses_a_table_config():
    run = subprocess.run([sys.executable, "-m", "tff_idp.report", "--status"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(status.BEGIN) and run.stdout.rstrip().endswith(status.END)
    bad = subprocess.run([sys.executable, "-m", "tff_idp.report", SHAKESPEARE, "--status"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "table=" in bad.stderr


def _evidence(rows, claims=()):
    return status.Evidence(cells=rows, claims=list(claims), archived=0, runs=len(rows),
                           differs=[])


def _cell(method, ours, std, paper, seeds=3, column=""):
    return {"dataset": "D", "column": column, "method": method, "seeds_done": str(seeds),
            "ours_mean": str(ours), "ours_std": str(std), "paper": str(paper),
            "difference": str(round(ours - paper, 3))}


def test_within_rule_explained_seed_spread_unexplained():
    row = status.Row(paper="0", what="T", data="D", offline="yes", kind="cells",
                     explained=(status.Reading(method="c", text="why c", report="r"),))
    ev = _evidence([_cell("a", 71.0, 1.0, 72.5),           # within 2
                    _cell("b", 70.0, 1.5, 72.5),           # 2.5 away, 1.7 std: spread
                    _cell("c", 10.0, 1.0, 72.5),           # explained
                    _cell("d", 60.0, 1.0, 72.5),           # 12.5 std: unexplained
                    _cell("e", 60.0, 0.0, 72.5, seeds=1),  # one seed: no spread to speak of
                    {"dataset": "D", "column": "", "method": "f", "seeds_done": "0",
                     "ours_mean": "", "ours_std": "", "paper": "70", "difference": ""},
                    {"dataset": "D", "column": "", "method": "g", "seeds_done": "3",
                     "ours_mean": "50", "ours_std": "1", "paper": "", "difference": ""}])
    text = status.within_text(ROOT, row, ev)
    assert text.startswith("1 / 5 (1 not run); ")
    assert "b -2.50: within the seed spread (1.7 std)" in text
    assert "c -62.50: explained: why c ([evidence](r/report.md))" in text
    assert "d -12.50: unexplained (12.5 std)" in text
    assert "e -12.50: unexplained;" in text or text.endswith("e -12.50: unexplained")


def test_an_open_gap_says_what_was_tried_and_what_not(tmp_path):
    """Issue 77, item 5: a gap not explained yet is *open* only with what was tried, what
    was not and the report it rests on; the README's Shakespeare Table II row has no
    unexplained cell, nor does any other row of the table."""
    row = status.Row(paper="0", what="T", data="D", offline="yes", kind="cells",
                     open=(status.Reading(method="d", text="tried: x; not tried: y",
                                          report="r"),))
    text = status.within_text(ROOT, row, _evidence([_cell("d", 60.0, 1.0, 72.5)]))
    assert text == "0 / 1; d -12.50: open: tried: x; not tried: y ([evidence](r/report.md))"
    for bad in ('text = "tried: x"\nreport = "r"', 'text = "tried: x; not tried: y"'):
        toml = tmp_path / "status.toml"
        toml.write_text('[[row]]\npaper = "0"\nwhat = "T"\ndata = "D"\noffline = "yes"\n'
                        'kind = "cells"\nconfig = "c.toml"\n\n[[row.open]]\n'
                        f'method = "d"\n{bad}\n')
        with pytest.raises(ConfigError, match="method='d': an open gap's text says"):
            status.load_rows(toml)
    line = next(l for l in (ROOT / "README.md").read_text().splitlines()
                if l.startswith("| 000 | Table II | Shakespeare"))
    assert "unexplained" not in line and line.count(": open: tried: ") == 5
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index(status.BEGIN):readme.index(status.END)]
    assert "unexplained" not in table


def test_claims_are_counted_by_their_exact_verdict():
    from tff_idp.harness import claims
    ev = _evidence([], [{"claim": "x", "verdict": claims.HOLDS},
                        {"claim": "y", "verdict": claims.HOLDS_WITHIN_NOISE},
                        {"claim": "z", "verdict": claims.HOLDS_WITHIN_NOISE},
                        {"claim": "w", "verdict": claims.FAILS}])
    assert status.claims_text(ev) == ("4 claims: 1 holds; 2 hold on the means within the seed "
                                      "noise; 1 does not hold (w)")
    # the failing claims are named beside their own count, not after the last one, and
    # one judged on a single seed says so
    ev = _evidence([], [{"claim": "w", "verdict": claims.FAILS + " (1 seed)"},
                        {"claim": "v", "verdict": claims.NOT_RUN}])
    assert status.claims_text(ev) == "2 claims: 1 does not hold (w, 1 seed); 1 not run"


def test_a_number_without_evidence_is_refused(tmp_path):
    (tmp_path / "e.md").write_text("ours 74.02 against 75.83\n")
    row = status.Row(paper="0", what="T", data="D", offline="yes", kind="text",
                     within="74.02 vs 75.83", evidence=("e.md",))
    status.check_numbers(tmp_path, row)
    typo = status.Row(paper="0", what="T", data="D", offline="yes", kind="text",
                      within="74.20 vs 75.83", evidence=("e.md",))
    with pytest.raises(ConfigError, match="74.20"):
        status.check_numbers(tmp_path, typo)


def _copy_table(tmp_path: Path) -> Path:
    """The archived Shakespeare seed-0 table, its config and its report, in a repository of
    their own."""
    for rel in (SHAKESPEARE, f"{SHAKESPEARE_REPORT}/report.csv"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    shutil.copytree(ROOT / "runs/archive/gdpfed-shakespeare-table2-seed0",
                    tmp_path / "runs/archive/gdpfed-shakespeare-table2-seed0")
    return tmp_path


def test_archived_runs_are_read_and_checked_against_the_committed_report(tmp_path):
    root = _copy_table(tmp_path)
    row = status.Row(paper="000", what="Table II", data="Shakespeare", offline="yes",
                     kind="cells", config=SHAKESPEARE, report=SHAKESPEARE_REPORT)
    ev = status.gather(root, row)
    assert (ev.archived, ev.runs, ev.differs) == (6, 6, [])
    path = root / SHAKESPEARE_REPORT / "report.csv"
    rows = list(csv.DictReader(open(path)))
    rows[0]["ours_mean"] = str(float(rows[0]["ours_mean"]) + 1.0)   # a report gone stale
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    ev = status.gather(root, row)
    assert ev.differs == [f"Shakespeare / {rows[0]['method']}"]
    # one archived run gone: the committed report is read, and the row says 5 of 6
    shutil.rmtree(next((root / "runs/archive").rglob("pfa-seed0")))
    ev = status.gather(root, row)
    assert (ev.archived, ev.runs, ev.differs) == (5, 6, [])
    assert float(ev.cells[0]["ours_mean"]) == float(rows[0]["ours_mean"])


def test_a_text_row_with_a_config_counts_its_archived_runs(tmp_path):
    """A row whose words are given (no paper numbers to count) still says how many of its
    config's runs are archived."""
    root = _copy_table(tmp_path)
    report = f"{SHAKESPEARE_REPORT}/report.csv"
    value = next(csv.DictReader(open(root / report)))["ours_mean"]
    row = status.Row(paper="000", what="T", data="D", offline="yes", kind="text",
                     within=f"ours {value}", evidence=(report,), config=SHAKESPEARE)
    assert status.status_rows(root, [row])[0][6] == "6 / 6"
    shutil.rmtree(next((root / "runs/archive").rglob("pfa-seed0")))
    assert status.status_rows(root, [row])[0][6] == "5 / 6"
    words = status.Row(paper="000", what="T", data="D", offline="yes", kind="text",
                       within=f"ours {value}", evidence=(report,))
    assert status.status_rows(root, [words])[0][6] == "-"


def test_the_bounds_row_links_reports_its_command_writes(tmp_path):
    """Paper 002's Figures 3-6 are computed: each committed report (report.md, report.csv,
    the bounds' CSV) is what the status row's command writes, to the byte."""
    row = next(r for r in status.load_rows(ROOT / "runs" / "status.toml")
               if r.what == "Figures 3-6 (bounds)")
    figures = ["figure3a", "figure3b", "figure4", "figure5", "figure6"]
    assert all(f in row.command for f in figures)
    for figure in figures:
        committed = ROOT / "runs" / "ms_pafl" / "reports" / "bounds" / figure
        run = subprocess.run([sys.executable, "-m", "tff_idp.report",
                              f"runs/ms_pafl/{figure}.toml", "--report-dir",
                              str(tmp_path / figure)], capture_output=True, text=True,
                             cwd=ROOT, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        for name in ("report.md", "report.csv", "Adult/bounds.csv"):
            assert (tmp_path / figure / name).read_bytes() == \
                (committed / name).read_bytes(), (figure, name)
