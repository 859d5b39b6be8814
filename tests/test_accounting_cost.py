"""scripts/accounting_cost.py (the accounting timings docs/privacy.md quotes) runs and prints
every item with the noise multipliers the planners give."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_script_prints_each_timing_and_the_plans_numbers():
    done = subprocess.run([sys.executable, "scripts/accounting_cost.py", "--repeats", "1"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["poisson_curve_ms"] > 0 and report["fixed_cohort_curve_ms"]["ms"] > 0
    assert 0 < report["fixed_cohort_curve_ms"]["epsilon"] < 100
    plan = report["fixed_gdpfed_plan"]["noise_multipliers"]
    assert len(plan) == 3 and plan[0] > plan[1] > plan[2] > 0     # strictest group first
    assert report["table1_idp_sample_plan"]["seconds"] > 0


def test_a_repeat_count_below_one_is_one_line_exit_2():
    done = subprocess.run([sys.executable, "scripts/accounting_cost.py", "--repeats", "0"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and "--repeats=0" in lines[-1] and done.stdout == ""
