"""Redraw committed reports from their archived runs, as tests/harness/test_committed_reports.py
checks them (``python -m tff_idp.report CONFIG --scale SCALE [--only LABELS]`` into a fresh
output folder, nothing trained), and copy the redraw over the committed report: after a
change to the report's wording, so that every committed report is today's redraw.

    python scripts/redraw_reports.py runs/dp_pfeddsu/reports/fmnist/ablations ...
    python scripts/redraw_reports.py --all          # every committed report of trained runs
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FILES = ("report.csv", "curves.csv", "claims.csv", "report.md")   # what the test compares


def redraw(report, found) -> None:
    from tff_idp.report.evidence import only_args
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        run = subprocess.run(
            [sys.executable, "-m", "tff_idp.report", found.config, "--scale", found.scale,
             "--output-dir", str(tmp / "results"), "--report-dir", str(tmp / "report"),
             *only_args(found, ROOT)], capture_output=True, text=True, cwd=ROOT)
        if run.returncode != 0:
            raise SystemExit(f"{report}: {run.stderr.strip().splitlines()[-1]}")
        for name in FILES:
            if (ROOT / report / name).exists() and (tmp / "report" / name).exists():
                shutil.copyfile(tmp / "report" / name, ROOT / report / name)
    print(report)


def main(args) -> None:
    from tff_idp.report.evidence import committed_reports
    reports = {r.folder: r for r in committed_reports(ROOT)}
    for report in (sorted(reports) if args == ["--all"] else args):
        redraw(report.rstrip("/"), reports[report.rstrip("/")])


if __name__ == "__main__":
    main(sys.argv[1:])
