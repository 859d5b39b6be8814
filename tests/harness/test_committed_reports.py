"""Issue 59 item 1: a committed report whose runs are all archived is redrawn by the user's own
command, ``python -m tff_idp.report CONFIG --scale SCALE``, in a fresh output folder and
without training, to the same numbers: report.csv, curves.csv (and claims.csv where the config
has claims) and report.md byte for byte."""
from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest

from tff_idp.report import evidence
from tff_idp.report.evidence import committed_reports
from tff_idp.report.status import readme_block

ROOT = Path(__file__).resolve().parents[2]

# (committed report folder, its config): every report of runs/ whose runs are all archived
# (test_every_fully_archived_report_is_redrawn below keeps this list complete)
REDRAWN = [
    ("runs/gdpfed/reports/shakespeare-local-work-seed0",
     "runs/gdpfed/ablations/shakespeare-local-work-seed0.toml"),
    ("runs/ms_pafl/reports/adult/figure2", "runs/ms_pafl/figure2.toml"),
    ("runs/idp_fedavg/reports/fmnist/table1", "runs/idp_fedavg/fmnist-table1.toml"),
    ("runs/dp_pfeddsu/reports/fmnist/ablations", "runs/dp_pfeddsu/fmnist/ablations.toml"),
    ("runs/dp_pfeddsu/reports/fmnist/table2-mlp", "runs/dp_pfeddsu/fmnist/table2-mlp.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-table2-same-padding",
     "runs/gdpfed/ablations/fmnist-table2-same-padding.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-table4-same-padding",
     "runs/gdpfed/ablations/fmnist-table4-same-padding.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-table6-same-padding",
     "runs/gdpfed/ablations/fmnist-table6-same-padding.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-table8-same-padding",
     "runs/gdpfed/ablations/fmnist-table8-same-padding.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-table2-baselines",
     "runs/gdpfed/ablations/fmnist-table2-baselines.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-table5-dirichlet",
     "runs/gdpfed/ablations/fmnist-table5-dirichlet.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations", "runs/gdpfed/ablations/fmnist-readings.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-dp-step",
     "runs/gdpfed/ablations/fmnist-dp-step.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-table4-dp-step",
     "runs/gdpfed/ablations/fmnist-table4-dp-step.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-readings-same-padding",
     "runs/gdpfed/ablations/fmnist-readings-same-padding.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-table2-seeds-3-5",
     "runs/gdpfed/ablations/fmnist-table2-seeds-3-5.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-table7-seeds-3-5",
     "runs/gdpfed/ablations/fmnist-table7-seeds-3-5.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-budget-scale",
     "runs/gdpfed/ablations/fmnist-budget-scale.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-table7-basic-conversion",
     "runs/gdpfed/ablations/fmnist-table7-basic-conversion.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-optimisation",
     "runs/gdpfed/ablations/fmnist-optimisation.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-idp-printed-rates",
     "runs/gdpfed/ablations/fmnist-idp-printed-rates.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-standardize-diagnostics-seed0",
     "runs/gdpfed/ablations/fmnist-standardize-diagnostics-seed0.toml"),
    ("runs/gdpfed/reports/paper-fmnist/table2", "runs/gdpfed/table2.toml"),
    ("runs/gdpfed/reports/paper-fmnist/table4", "runs/gdpfed/table4.toml"),
    ("runs/gdpfed/reports/paper-fmnist/table6", "runs/gdpfed/table6.toml"),
    ("runs/gdpfed/reports/paper-fmnist/table7", "runs/gdpfed/table7.toml"),
    ("runs/gdpfed/reports/paper-fmnist/table8", "runs/gdpfed/table8.toml"),
    ("runs/gdpfed/reports/paper-fmnist/canary-audit",
     "runs/gdpfed/ablations/fmnist-table2-canaries.toml"),
    ("runs/gdpfed/reports/shakespeare-model-seed0",
     "runs/gdpfed/ablations/shakespeare-model-seed0.toml"),
    ("runs/gdpfed/reports/shakespeare-pfa-public-noise-seed0",
     "runs/gdpfed/ablations/shakespeare-pfa-public-noise-seed0.toml"),
    ("runs/gdpfed/reports/shakespeare-table2", "runs/gdpfed/table2.toml"),
    ("runs/gdpfed/reports/shakespeare-table2-seed0",
     "runs/gdpfed/ablations/shakespeare-table2-seed0.toml"),
    ("runs/ms_pafl/reports/fmnist/figure2", "runs/ms_pafl/fmnist/figure2.toml"),
    ("runs/idp_fedavg/smoke-reports/table1", "runs/idp_fedavg/table1.toml"),
    ("runs/dp_pfeddsu/smoke-reports/table2", "runs/dp_pfeddsu/table2.toml"),
    ("runs/gdpfed/smoke-reports/table8", "runs/gdpfed/table8.toml"),
    ("runs/dp_pfeddsu/smoke-reports/table6", "runs/dp_pfeddsu/table6.toml"),
    ("runs/dp_pfeddsu/smoke-reports/table3", "runs/dp_pfeddsu/table3.toml"),
    ("runs/gdpfed/smoke-reports/table7", "runs/gdpfed/table7.toml"),
    ("runs/gdpfed/smoke-reports/table4", "runs/gdpfed/table4.toml"),
    ("runs/dp_pfeddsu/smoke-reports/table7", "runs/dp_pfeddsu/table7.toml"),
    ("runs/dp_pfeddsu/smoke-reports/table5", "runs/dp_pfeddsu/table5.toml"),
    ("runs/dp_pfeddsu/smoke-reports/table4", "runs/dp_pfeddsu/table4.toml"),
    ("runs/gdpfed/smoke-reports/table6", "runs/gdpfed/table6.toml"),
    ("runs/gdpfed/smoke-reports/table5", "runs/gdpfed/table5.toml"),
    ("runs/gdpfed/smoke-reports/table2", "runs/gdpfed/table2.toml"),
    ("runs/ms_pafl/reports/fmnist/ldp-fedavg-noise", "runs/ms_pafl/fmnist/ldp-fedavg-noise.toml"),
]


def test_every_fully_archived_report_is_redrawn():
    """A report counts as fully archived when the archive holds as many runs of its table and
    data sets at its scale as the report counts complete (report.evidence); each such report
    is in REDRAWN."""
    fully = [(r.folder, r.config) for r in _committed().values() if r.redrawn]
    assert len(fully) >= 44
    assert sorted(fully) == sorted(REDRAWN)


def test_the_archives_list_of_committed_reports_is_current():
    """runs/archive/README.md's list (every committed report, its runs and how many are
    archived) is what ``python -m tff_idp.report --status --write`` makes of the repository
    as it stands."""
    listing = (ROOT / "runs/archive/README.md").read_text()
    assert readme_block(listing, evidence.BEGIN, evidence.END) == \
        evidence.evidence_markdown(ROOT), "stale: run python -m tff_idp.report --status --write"


def test_a_report_is_redrawn_only_when_the_runs_of_its_own_data_sets_are_archived(tmp_path):
    """Table II's FMNIST and Shakespeare columns are two reports of one config: runs archived
    for one data set do not count for the other's report."""
    (tmp_path / "runs/t").mkdir(parents=True)
    (tmp_path / "runs/t/c.toml").write_text('[table]\nname = "t"\n')
    for label in ("FMNIST", "Shakespeare s=1"):
        folder = tmp_path / "runs/reports" / label.split()[0]
        folder.mkdir(parents=True)
        (folder / "report.md").write_text("Config: `runs/t/c.toml`.\n\nScale `paper`: 2 of 2 "
                                          "runs complete.\n\n- Training time of the 2 "
                                          "complete runs at `paper` scale: 7200 s (sum)\n")
        (folder / "report.csv").write_text(f"dataset,column,method\n{label},,m\n")
    for seed in (0, 1):
        run = tmp_path / f"runs/archive/t/paper/Shakespeare_s_1/m-seed{seed}"
        run.mkdir(parents=True)
        (run / "summary.json").write_text("{}")
    found = {Path(r.folder).name: r for r in evidence.committed_reports(tmp_path)}
    assert (found["FMNIST"].archived, found["FMNIST"].redrawn) == (0, False)
    assert found["FMNIST"].missing_training_s == 7200
    assert (found["Shakespeare"].archived, found["Shakespeare"].redrawn) == (2, True)
    assert found["Shakespeare"].missing_training_s == 0
    heads = [line for line in evidence.evidence_markdown(tmp_path).splitlines()
             if line.startswith("### ")]
    assert heads == ["### Scale `paper`: 1 of 2 reports redrawn from their archived runs; "
                     "the others' runs not yet archived took 2.0 h of training when they "
                     "were made"]
    for seed in (0, 1):                          # FMNIST's too: nothing left to archive
        run = tmp_path / f"runs/archive/t/paper/FMNIST/m-seed{seed}"
        run.mkdir(parents=True)
        (run / "summary.json").write_text("{}")
    assert "### Scale `paper`: 2 of 2 reports redrawn from their archived runs\n" in \
        evidence.evidence_markdown(tmp_path)


@functools.lru_cache(maxsize=None)
def _committed() -> dict:
    """{folder: CommittedReport} of the repository (its scale and data sets, as the archive
    list reads them from report.md and report.csv)."""
    return {r.folder: r for r in committed_reports(ROOT)}


def _only(found, config: str) -> list:
    """``--only LABELS`` when the committed report covers some of its config's data sets
    (``report.evidence.only_args``)."""
    from tff_idp.report.evidence import only_args
    return only_args(found, ROOT)


# ``python -m tff_idp.report ARGS``, saying at exit whether TensorFlow was imported
_REPORT_SAYING_IF_TF_STARTED = (
    "import runpy, sys\n"
    "try:\n"
    "    runpy.run_module('tff_idp.report', run_name='__main__', alter_sys=True)\n"
    "finally:\n"
    "    print('tensorflow imported' if 'tensorflow' in sys.modules else '', file=sys.stderr)\n")


@pytest.mark.parametrize("report, config", REDRAWN, ids=[r.split("/")[-1] for r, _ in REDRAWN])
def test_a_committed_report_is_redrawn_from_its_archived_runs(report, config, tmp_path):
    found = _committed()[report]
    run = subprocess.run(
        [sys.executable, "-c", _REPORT_SAYING_IF_TF_STARTED, config, "--scale", found.scale,
         "--output-dir", str(tmp_path / "results"), "--report-dir", str(tmp_path / "report"),
         *_only(found, config)],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "archived" in run.stdout + run.stderr      # it says where the runs came from
    # drawing a report from finished runs starts no TensorFlow (2.5 s against 10 s here)
    assert "tensorflow imported" not in run.stderr
    # its missing runs (Shakespeare Table II: 7 of 18 never made) are in no committed report
    assert "neither here nor archived" not in run.stderr, run.stderr[-1000:]
    assert not list((tmp_path / "results").rglob("checkpoint*")), "nothing was trained"
    committed = ROOT / report
    for name in ("report.csv", "curves.csv", "claims.csv", "report.md"):
        if (committed / name).exists():
            assert (tmp_path / "report" / name).read_text() == (committed / name).read_text(), \
                f"{report}/{name} differs from its redraw"
    # the numbers are on the terminal (issue 62: the row's command prints them): the
    # report's own lines, its results table among them
    printed = [line for line in run.stdout.splitlines() if line]
    lines = set((committed / "report.md").read_text().splitlines())
    assert sum(line.startswith("|") for line in printed) >= 3, run.stdout
    assert all(line in lines or line == "The paper's claims, checked:" for line in printed), \
        run.stdout


def test_a_report_of_runs_not_archived_points_to_the_committed_one(tmp_path, capsys,
                                                                  monkeypatch):
    """In a fresh clone the row's command of a report whose runs are not archived says, in one
    line, which committed report was made from them (and it is not an error to ask). On a
    repository made here (this one's reports may all be archived): a table config under
    runs/, its empty archive, and a committed report of it at smoke scale."""
    from tff_idp.report import cli
    repo = tmp_path / "repo"
    (repo / "runs" / "archive").mkdir(parents=True)
    (repo / "runs" / "t.toml").write_text((ROOT / "runs/dp_pfeddsu/table4.toml").read_text())
    committed = repo / "runs" / "reports" / "t-smoke"
    committed.mkdir(parents=True)
    (committed / "report.md").write_text(
        "# t\n\nSource: Paper 001 Table IV. Config: `runs/t.toml`.\n\n"
        "Scale `smoke`: 9 of 9 runs complete. Each cell: ours.\n")
    (committed / "report.csv").write_text("dataset,column,method\nCIFAR-10 s=10,none,centaur\n")
    monkeypatch.setattr(cli, "REPOSITORY", repo)
    [found] = committed_reports(repo)
    assert (found.scale, found.archived, found.redrawn) == ("smoke", 0, False)
    assert cli.main([str(repo / "runs" / "t.toml"), "--scale", "smoke", "--output-dir",
                     str(tmp_path / "results"), "--report-dir", str(tmp_path / "report")]) == 1
    said = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(said) == 1 and said[0].startswith("error: no run of dp-pfeddsu-table4"), said
    assert said[0].endswith("; the committed report made from runs not archived: "
                            "runs/reports/t-smoke/report.md"), said[0]
    # a report of other data sets is not pointed to
    assert cli.main([str(repo / "runs" / "t.toml"), "--scale", "smoke", "--only", "CIFAR-10 s=5",
                     "--output-dir", str(tmp_path / "results")]) == 1
    assert "committed report" not in capsys.readouterr().err


def test_a_report_with_overrides_points_to_no_committed_report(tmp_path, capsys):
    """With --set the runs asked for are not those of a committed report (made without it):
    the refusal names none, though the table's runs are archived, and its command to train
    them carries the --set."""
    from tff_idp.report.cli import main
    config = "runs/dp_pfeddsu/table4.toml"
    assert [r for r in _committed().values() if r.config == config and r.scale == "smoke"]
    assert main([str(ROOT / config), "--scale", "smoke", "--set", "delta=1e-6", "--output-dir",
                 str(tmp_path / "results"), "--report-dir", str(tmp_path / "report")]) == 1
    said = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(said) == 1 and said[0].startswith("error: no run of dp-pfeddsu-table4"), said
    assert "committed report" not in said[0], said[0]
    assert said[0].endswith(f"(train them: python -m tff_idp.run {ROOT / config} --scale smoke "
                            "--set delta=1e-6)"), said[0]      # the runs asked for
    assert not (tmp_path / "report").exists()


def test_every_committed_report_keeps_its_curves():
    """docs/tables.md: every committed report of trained runs keeps curves.csv, from which
    `report --replot` redraws its convergence figure without the runs."""
    reports = list(_committed().values())
    assert len(reports) >= 42
    assert [r.folder for r in reports if not (ROOT / r.folder / "curves.csv").is_file()] == []
