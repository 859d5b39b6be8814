"""The grid runner (skip complete, rerun only what is missing, parallel workers), the Slurm
array script and its task logic, and report rendering."""
import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tff_idp.engine.loop import run_fingerprint
from tff_idp.harness.runner import folder_state, pending
from tff_idp.harness.table import expand, load_table

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def _run(args, **kw):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=kw.pop("env", ENV),
                          capture_output=True, text=True, timeout=600, **kw)


def test_run_skips_complete_and_reruns_only_what_is_missing(table):
    first = _run(["tff_idp.run", str(table), "--scale", "smoke", "--quiet"])
    assert first.returncode == 0, first.stderr[-1500:]
    assert "4 runs, 0 complete, 4 to run" in first.stderr
    spec = load_table(str(table))
    units = expand(spec, "smoke")
    assert not pending(units)
    report = spec.out_root("smoke") / "report" / "report.md"
    assert report.is_file() and (report.parent / "convergence.png").is_file()
    again = _run(["tff_idp.run", str(table), "--scale", "smoke", "--quiet"])
    assert again.returncode == 0 and "4 runs, 4 complete, 0 to run" in again.stderr
    # an interrupted run (only its .partial folder) and a deleted one are run again
    victim = units[1].folder
    shutil.move(str(victim), str(victim) + ".partial")
    assert folder_state(units[1]) in ("running", "stalled") and len(pending(units)) == 1
    third = _run(["tff_idp.run", str(table), "--scale", "smoke", "--quiet", "--jobs", "2"])
    assert third.returncode == 0 and "4 runs, 3 complete, 1 to run" in third.stderr
    assert not pending(units)


def test_a_folder_made_with_another_config_is_stale(table, tmp_path):
    spec = load_table(str(table))
    unit = expand(spec, "smoke")[0]
    unit.folder.mkdir(parents=True)
    (unit.folder / "summary.json").write_text("{}")
    (unit.folder / "config.json").write_text(json.dumps({"fingerprint": "something-else"}))
    assert folder_state(unit) == "stale" and unit in pending([unit])


def test_slurm_script_and_task_logic(table, tmp_path):
    spec = load_table(str(table))
    units = expand(spec, "smoke")
    proc = _run(["tff_idp.slurm", "submit", str(table), "--scale", "smoke", "--dry-run",
                 "--partition", "gpu", "--gres", "gpu:1", "--time", "02:00:00",
                 "--array-parallel", "2"])
    assert proc.returncode == 0, proc.stderr
    script_path = spec.out_root("smoke") / "slurm" / "array.sbatch"
    script = script_path.read_text()
    for line in ("#SBATCH --array=0-3%2", "#SBATCH --requeue", "#SBATCH --gres=gpu:1",
                 "#SBATCH --partition=gpu", "#SBATCH --time=02:00:00", "trap requeue TERM",
                 "python -m tff_idp.harness.task"):
        assert line in script, line
    assert len((spec.out_root("smoke") / "slurm" / "units.tsv").read_text().splitlines()) == 4
    # the script itself, as array task 2, on this machine
    env = dict(ENV, SLURM_ARRAY_TASK_ID="2", SLURM_ARRAY_JOB_ID="77")
    ran = subprocess.run(["bash", str(script_path)], env=env, capture_output=True, text=True,
                         timeout=600)
    assert ran.returncode == 0, ran.stderr[-1500:]
    assert [folder_state(u) for u in units] == ["pending", "pending", "done", "pending"]
    # the task logic directly: a complete unit is skipped
    again = _run(["tff_idp.harness.task", str(table), "--scale", "smoke"], env=env)
    assert again.returncode == 0 and "already complete" in again.stderr
    status = _run(["tff_idp.slurm", "status", str(table), "--scale", "smoke"])
    assert "done 1" in status.stdout and "pending 3" in status.stdout
    # resubmitting leaves the complete unit out of the array
    _run(["tff_idp.slurm", "submit", str(table), "--scale", "smoke", "--dry-run"])
    assert "#SBATCH --array=0-1,3\n" in script_path.read_text()
    bad = _run(["tff_idp.harness.task", str(table), "--scale", "smoke"],
               env={k: v for k, v in ENV.items() if k != "SLURM_ARRAY_TASK_ID"})
    assert bad.returncode == 2 and "SLURM_ARRAY_TASK_ID" in bad.stderr
    collect = _run(["tff_idp.slurm", "collect", str(table), "--scale", "smoke"])
    assert collect.returncode == 0 and "1 of 4 units complete" in collect.stdout


def _fake_result(unit, accuracy, curve):
    unit.folder.mkdir(parents=True)
    (unit.folder / "config.json").write_text(json.dumps(
        {"fingerprint": run_fingerprint(unit.cfg, unit.method)}))
    (unit.folder / "summary.json").write_text(json.dumps(
        {"final_test_accuracy": accuracy, "seconds_total": 2.0}))
    with open(unit.folder / "metrics.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["round", "test_accuracy"])
        w.writeheader()
        w.writerows({"round": i + 1, "test_accuracy": a} for i, a in enumerate(curve))
    (unit.folder / "ledger.csv").write_text("client,group,budget,participations,epsilon\n")


def test_report_aggregates_seeds_and_compares_with_the_paper(table):
    from tff_idp.report import write_report
    spec = load_table(str(table))
    units = expand(spec, "paper")                    # 2 methods x 2 columns x 2 seeds
    for u in units:
        if u.method == "p_fedavg" and u.column == "1x":
            _fake_result(u, 0.70 if u.seed == 0 else 0.80, [0.5, 0.6, 0.7 + 0.1 * u.seed])
        elif not (u.method == "dp_fedavg" and u.column == "2x"):
            _fake_result(u, 0.5, [0.3, 0.4, 0.5])
    # an interrupted run is never reported as complete
    partial = [u for u in units if u.method == "dp_fedavg" and u.column == "2x"][0].folder
    partial.with_name(partial.name + ".partial").mkdir(parents=True)
    md_path = write_report(spec, "paper")
    md = md_path.read_text()
    assert "| digits | p_fedavg | 75.00 ± 7.07 / 80.00 (-5.00) | 50.00 ± 0.00 / 81.50 (-31.50) |" in md
    assert "| digits | dp_fedavg | 50.00 ± 0.00 | missing |" in md
    assert "6 of 8 runs complete" in md and "digits/2x/dp_fedavg/seed0" in md
    rows = list(csv.DictReader(open(md_path.parent / "report.csv")))
    p1 = [r for r in rows if r["method"] == "p_fedavg" and r["column"] == "1x"][0]
    assert float(p1["ours_mean"]) == 75.0 and float(p1["difference"]) == -5.0
    png = md_path.parent / "convergence.png"
    assert png.is_file() and png.read_bytes()[:4] == b"\x89PNG"


def test_report_of_a_computed_table(tmp_path):
    from tff_idp.report import write_report
    spec = load_table(str(ROOT / "runs" / "gdpfed" / "figure1.toml"))
    md = write_report(spec, "paper", tmp_path / "fig1")
    text = md.read_text()
    assert "| 0.5 | 0.63 | 1.83 | 3.54 |" in text           # Problem 1 at FMNIST's epsilon_1
    assert (tmp_path / "fig1" / "rates.png").read_bytes()[:4] == b"\x89PNG"
