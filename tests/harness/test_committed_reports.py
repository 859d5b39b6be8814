"""Issue 59 item 1: a committed report whose runs are all archived is redrawn by the user's own
command, ``python -m tff_idp.report CONFIG --scale SCALE``, in a fresh output folder and
without training, to the same numbers: report.csv, curves.csv (and claims.csv where the config
has claims) and report.md byte for byte."""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (committed report folder, its config): every report of runs/ whose runs are all archived
# (test_every_fully_archived_report_is_redrawn below keeps this list complete)
REDRAWN = [
    ("runs/gdpfed/reports/paper-fmnist/ablations-table2-same-padding",
     "runs/gdpfed/ablations/fmnist-table2-same-padding.toml"),
    ("runs/gdpfed/reports/paper-fmnist/ablations-table6-same-padding",
     "runs/gdpfed/ablations/fmnist-table6-same-padding.toml"),
    ("runs/gdpfed/reports/paper-fmnist/canary-audit",
     "runs/gdpfed/ablations/fmnist-table2-canaries.toml"),
    ("runs/gdpfed/reports/shakespeare-pfa-public-noise-seed0",
     "runs/gdpfed/ablations/shakespeare-pfa-public-noise-seed0.toml"),
    ("runs/gdpfed/reports/shakespeare-table2-seed0",
     "runs/gdpfed/ablations/shakespeare-table2-seed0.toml"),
    ("runs/ms_pafl/reports/fmnist/figure2", "runs/ms_pafl/fmnist/figure2.toml"),
    ("runs/ms_pafl/reports/fmnist/ldp-fedavg-noise", "runs/ms_pafl/fmnist/ldp-fedavg-noise.toml"),
]


def _committed_reports():
    """(report folder, config, scale, runs it counts) of every committed report.md."""
    out = []
    for md in sorted(ROOT.glob("runs/**/report.md")):
        text = md.read_text()
        config = re.search(r"Config: `([^`]+)`", text)
        scale = re.search(r"Scale `(\w+)`: (\d+) of (\d+) runs complete", text)
        if config and scale:
            out.append((str(md.parent.relative_to(ROOT)), config.group(1), scale.group(1),
                        int(scale.group(3))))
    return out


def test_every_fully_archived_report_is_redrawn():
    """A report counts as fully archived when the archive holds as many runs of its table at
    its scale as the report counts; each such report is in REDRAWN."""
    fully = []
    for report, config, scale, runs in _committed_reports():
        name = tomllib.loads((ROOT / config).read_text())["table"]["name"]
        archived = len(list((ROOT / "runs/archive" / name / scale).rglob("summary.json")))
        if archived == runs:
            fully.append((report, config))
    assert len(fully) >= 7
    assert sorted(fully) == sorted(REDRAWN)


@pytest.mark.parametrize("report, config", REDRAWN, ids=[r.split("/")[-1] for r, _ in REDRAWN])
def test_a_committed_report_is_redrawn_from_its_archived_runs(report, config, tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "tff_idp.report", config, "--scale", "paper",
         "--output-dir", str(tmp_path / "results"), "--report-dir", str(tmp_path / "report")],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "archived" in run.stdout + run.stderr      # it says where the runs came from
    assert not list((tmp_path / "results").rglob("checkpoint*")), "nothing was trained"
    committed = ROOT / report
    for name in ("report.csv", "curves.csv", "claims.csv", "report.md"):
        if (committed / name).exists():
            assert (tmp_path / "report" / name).read_text() == (committed / name).read_text(), \
                f"{report}/{name} differs from its redraw"
