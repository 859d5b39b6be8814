"""The grid runner (skip complete, rerun only what is missing, parallel workers), the Slurm
array script and its task logic, and report rendering."""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from tff_idp.engine.fingerprint import run_fingerprint
from tff_idp.harness.runner import folder_state, pending
from tff_idp.harness.table import expand, load_table, unit_complete

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def _run(args, **kw):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=kw.pop("env", ENV),
                          capture_output=True, text=True, timeout=600, **kw)


def _run_here(args, capfd, monkeypatch):
    """``python -m tff_idp.run args`` in this process, one start-up of TensorFlow fewer
    than :func:`_run` (the same ``main``): its result with the exit status and stderr."""
    from tff_idp import run
    monkeypatch.chdir(ROOT)
    capfd.readouterr()
    code = run.main(args)
    return subprocess.CompletedProcess(args, code, "", capfd.readouterr().err)


def test_run_skips_complete_reruns_only_what_is_missing_and_force_retrains(table, capfd,
                                                                          monkeypatch):
    def here(*args):
        return _run_here(list(args), capfd, monkeypatch)
    first = here(str(table), "--scale", "smoke", "--quiet")
    assert first.returncode == 0, first.stderr[-1500:]
    assert "4 runs, 0 complete, 4 to run" in first.stderr
    spec = load_table(str(table))
    units = expand(spec, "smoke")
    assert not pending(units)
    report = spec.out_root("smoke") / "report" / "report.md"
    assert report.is_file() and (report.parent / "convergence.png").is_file()
    md = report.read_text()        # smoke: ours only, no comparison with the paper (issue 34)
    assert "paper's numbers are left out at smoke scale" in md and "80.00" not in md
    row = next(l for l in md.splitlines() if l.startswith("| digits | p_fedavg |"))
    assert " / " not in row and "(+" not in row and "(-" not in row, row
    again = here(str(table), "--scale", "smoke", "--quiet")
    assert again.returncode == 0 and "4 runs, 4 complete, 0 to run" in again.stderr
    # an interrupted run (only its .partial folder) and a deleted one are run again
    victim = units[1].folder
    shutil.move(str(victim), str(victim) + ".partial")
    assert folder_state(units[1]) in ("running", "stalled") and len(pending(units)) == 1
    third = _run(["tff_idp.run", str(table), "--scale", "smoke", "--jobs", "2"])
    assert third.returncode == 0 and "4 runs, 3 complete, 1 to run" in third.stderr
    # the bar names the worker's unit and its round (heartbeats): no round bar of its own
    assert re.search(re.escape(units[1].label) + r" (starting|round [0-2]/2 ~\d+ (s|min) left)",
                     third.stderr)
    assert not pending(units)
    # --force retrains the selected complete runs (one run of the table saved: this was a
    # test of its own, which trained the whole table first, until the suite outgrew 20
    # minutes)
    before = {u.label: (u.folder / "summary.json").stat().st_mtime_ns for u in units}
    for jobs in ("1", "2"):          # in this process, and through harness.task workers
        args = (str(table), "--scale", "smoke", "--quiet", "--force", "--methods", "p_fedavg",
                "--jobs", jobs)
        forced = here(*args) if jobs == "1" else _run(["tff_idp.run", *args])
        assert forced.returncode == 0, forced.stderr[-1500:]
        assert "2 runs, 2 complete, 2 to run (--force: complete ones too)" in forced.stderr
        after = {u.label: (u.folder / "summary.json").stat().st_mtime_ns for u in units}
        for u in units:
            assert (after[u.label] != before[u.label]) == (u.method == "p_fedavg"), u.label
        before = after
    assert not pending(units)
    # the table's own report after a run of some methods is still the whole table's; one
    # written elsewhere (--report-dir) is of the part chosen
    md = report.read_text()
    assert "| digits | dp_fedavg |" in md and "| digits | p_fedavg |" in md
    part = table.parent / "part"
    assert here(str(table), "--scale", "smoke", "--quiet", "--methods", "p_fedavg",
                "--report-dir", str(part)).returncode == 0
    md = (part / "report.md").read_text()
    assert "| digits | p_fedavg |" in md and "dp_fedavg" not in md


def test_a_folder_made_with_another_config_is_stale(table, tmp_path):
    spec = load_table(str(table))
    unit = expand(spec, "smoke")[0]
    unit.folder.mkdir(parents=True)
    (unit.folder / "summary.json").write_text("{}")
    (unit.folder / "config.json").write_text(json.dumps({"fingerprint": "something-else"}))
    assert folder_state(unit) == "stale" and unit in pending([unit])


def _fake_slurm(tmp_path, srun_status=None):
    """A PATH with fake ``srun`` (runs its command, or exits ``srun_status``), ``scontrol``
    (records its arguments in tmp_path/scontrol.log) and ``module`` (a set-up line's)."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    srun = bin_dir / "srun"
    body = f"exit {srun_status}" if srun_status is not None else \
        'while [ "${1#--}" != "$1" ]; do shift; done\nexec "$@"'
    srun.write_text(f"#!/bin/bash\n{body}\n")
    (bin_dir / "scontrol").write_text(f'#!/bin/bash\necho "$@" >> {tmp_path}/scontrol.log\n')
    (bin_dir / "module").write_text(f'#!/bin/bash\necho "$@" >> {tmp_path}/module.log\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return dict(ENV, PATH=f"{bin_dir}:{ENV['PATH']}")


def test_slurm_script_and_task_logic(table, tmp_path):
    spec = load_table(str(table))
    units = expand(spec, "smoke")
    proc = _run(["tff_idp.slurm", "submit", str(table), "--scale", "smoke", "--dry-run",
                 "--partition", "gpu", "--gres", "gpu:1", "--time", "02:00:00",
                 "--array-parallel", "2", "--qos", "high", "--constraint", "a100",
                 "--mail-type", "END,FAIL", "--sbatch=--exclusive",
                 "--setup", "module load cuda/12.2"])
    assert proc.returncode == 0, proc.stderr
    script_path = spec.out_root("smoke") / "slurm" / "array.sbatch"
    script = script_path.read_text()
    python = str(Path(sys.executable).absolute())
    for line in ("#SBATCH --array=0-3%2", "#SBATCH --requeue", "#SBATCH --gres=gpu:1",
                 "#SBATCH --partition=gpu", "#SBATCH --time=02:00:00",
                 "#SBATCH --signal=TERM@300", "#SBATCH --qos=high", "#SBATCH --constraint=a100",
                 "#SBATCH --mail-type=END,FAIL", "#SBATCH --exclusive", "set -euo pipefail",
                 f"cd {ROOT}", "module load cuda/12.2",
                 f"source scripts/gpu_env.sh {Path(python).parent.parent}",
                 'export SRUN_CPUS_PER_TASK="$SLURM_CPUS_PER_TASK"',
                 f'srun --ntasks=1 --cpus-per-task="$SLURM_CPUS_PER_TASK" {python} -m '
                 f"tff_idp.harness.task {table.resolve()} "
                 "--scale smoke --max-requeues 3 --require-gpu"):
        assert line in script, line
    assert "B:TERM" not in script and "source .venv" not in script
    assert len((spec.out_root("smoke") / "slurm" / "units.tsv").read_text().splitlines()) == 4
    env = dict(_fake_slurm(tmp_path), SLURM_ARRAY_TASK_ID="2", SLURM_ARRAY_JOB_ID="77")
    import tensorflow as tf
    if not tf.config.list_physical_devices("GPU"):
        # a GPU job on a node without a GPU (this machine): one line, exit 2, not requeued
        ran = subprocess.run(["bash", str(script_path)], env=env, capture_output=True,
                             text=True, timeout=600, cwd=tmp_path)
        errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
        assert ran.returncode == 2 and len(errors) == 1, ran.stderr[-1500:]
        assert "TensorFlow sees no GPU" in errors[0] and "not requeued" in errors[0]
        assert not (tmp_path / "scontrol.log").exists()
        assert [folder_state(u) for u in units] == ["pending"] * 4
        (tmp_path / "module.log").unlink()
    # the script itself, as array task 2, on this machine (srun runs the task here), as a
    # CPU job (--gres '')
    assert _run(["tff_idp.slurm", "submit", str(table), "--scale", "smoke", "--dry-run",
                 "--gres", "", "--setup", "module load cuda/12.2"]).returncode == 0
    assert "--require-gpu" not in script_path.read_text()
    ran = subprocess.run(["bash", str(script_path)], env=env, capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-1500:]
    assert (tmp_path / "module.log").read_text().strip() == "load cuda/12.2"
    assert [folder_state(u) for u in units] == ["pending", "pending", "done", "pending"]
    # the task logic directly: a complete unit is skipped
    again = _run(["tff_idp.harness.task", str(table), "--scale", "smoke"], env=env)
    assert again.returncode == 0 and "already complete" in again.stderr
    status = _run(["tff_idp.slurm", "status", str(table), "--scale", "smoke"])
    assert "done 1" in status.stdout and "pending 3" in status.stdout
    # resubmitting leaves the complete unit out of the array; --time from the cost model
    _run(["tff_idp.slurm", "submit", str(table), "--scale", "smoke", "--dry-run"])
    script = script_path.read_text()
    assert "#SBATCH --array=0-1,3\n" in script and "#SBATCH --time=0-00:16:00\n" in script
    bad = _run(["tff_idp.harness.task", str(table), "--scale", "smoke"],
               env={k: v for k, v in ENV.items() if k != "SLURM_ARRAY_TASK_ID"})
    assert bad.returncode == 2 and "SLURM_ARRAY_TASK_ID" in bad.stderr
    collect = _run(["tff_idp.slurm", "collect", str(table), "--scale", "smoke"])
    assert collect.returncode == 0 and "1 of 4 units complete" in collect.stdout


def test_a_task_stopped_by_sigterm_is_requeued_by_the_script(table, tmp_path):
    """srun's task exits 143 (stopped by SIGTERM after a checkpoint): the script asks
    scontrol to requeue this array task and ends 0; any other failure is passed on."""
    spec = load_table(str(table))
    assert _run(["tff_idp.slurm", "submit", str(table), "--scale", "smoke",
                 "--dry-run"]).returncode == 0
    script_path = spec.out_root("smoke") / "slurm" / "array.sbatch"
    for status, code, requeued in ((143, 0, True), (1, 1, False)):
        (tmp_path / "scontrol.log").unlink(missing_ok=True)
        env = dict(_fake_slurm(tmp_path, status), SLURM_ARRAY_TASK_ID="1",
                   SLURM_ARRAY_JOB_ID="9")
        ran = subprocess.run(["bash", str(script_path)], env=env, capture_output=True,
                             text=True, timeout=60)
        assert ran.returncode == code, ran.stderr
        log = tmp_path / "scontrol.log"
        assert (log.exists() and log.read_text().strip() == "requeue 9_1") == requeued


def test_sigterm_checkpoints_counts_stops_and_fails_after_the_cap(table, tmp_path,
                                                                   monkeypatch, capfd):
    """The task itself: a stop request mid-run -> checkpoint, exit 143, one stop counted; a
    stop beyond --max-requeues -> FAILED.txt, exit 1; a retry clears it and finishes the
    unit. The request is made deterministically right after the first round's heartbeat
    (as the handler of a SIGTERM would: ``StopRequests`` sets its flag), in this process,
    so it never misses a run that ends first."""
    import signal

    from tff_idp import runtime
    from tff_idp.engine import loop
    from tff_idp.harness import task
    table.write_text(table.read_text().replace("rounds = 3", "rounds = 60\ncheckpoint_every = 0"))
    spec = load_table(str(table))
    unit = expand(spec, "paper")[0]
    partial = unit.folder.with_name(unit.folder.name + ".partial")
    for key, value in (("SLURM_ARRAY_TASK_ID", "0"), ("SLURM_JOB_ID", "9")):
        monkeypatch.setenv(key, value)                  # a stop counts in a job
    monkeypatch.delenv("SLURM_JOB_END_TIME", raising=False)
    monkeypatch.setattr(runtime, "exit_cleanly_on_sigterm", lambda: None)  # pytest's own
    heartbeat = loop.write_heartbeat

    def stop_after_first_round(max_requeues):
        def beat_then_stop(folder, rounds_done, seconds, **mean):
            heartbeat(folder, rounds_done, seconds, **mean)
            runtime.StopRequests._active.signum = signal.SIGTERM
        monkeypatch.setattr(loop, "write_heartbeat", beat_then_stop)
        capfd.readouterr()
        code = task.main([str(table), "--scale", "paper", "--max-requeues",
                          str(max_requeues)])
        monkeypatch.setattr(loop, "write_heartbeat", heartbeat)
        return code, capfd.readouterr().err

    code, err = stop_after_first_round(3)
    assert code == 143, err
    assert (partial / "stops.txt").read_text().strip() == "1"
    assert (partial / "checkpoint.npz").exists()
    assert folder_state(unit) == "running"                       # its heartbeat is fresh
    beat = json.loads((partial / "heartbeat.json").read_text())  # and holds the mean pace
    assert beat["rounds_done"] == 1 and 0 < beat["mean_round_seconds"] < 600
    code, err = stop_after_first_round(0)
    assert code == 1, err
    assert (partial / "FAILED.txt").exists() and folder_state(unit) == "failed"
    assert "stopped 2 times near the time limit" in err
    retry = _run(["tff_idp.harness.task", str(table), "--scale", "paper"],
                 env=dict(ENV, SLURM_ARRAY_TASK_ID="0", SLURM_JOB_ID="9"))
    assert retry.returncode == 0, retry.stderr[-1500:]
    assert folder_state(unit) == "done" and not (unit.folder / "heartbeat.json").exists()


def test_a_setup_line_that_breaks_the_script_is_refused_and_nothing_is_written(table):
    """An unbalanced quote in --setup used to give a script that fails ``bash -n``."""
    spec = load_table(str(table))
    proc = _run(["tff_idp.slurm", "submit", str(table), "--scale", "smoke", "--dry-run",
                 "--setup", "export NAME='unbalanced"])
    lines = [line for line in proc.stderr.splitlines() if line.strip() and
             "tensorflow/" not in line]            # TF's import-time log (this env's level)
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: --setup=") and "would not parse (bash -n:" in lines[0]
    assert not (spec.out_root("smoke") / "slurm").exists()


def test_submit_refuses_a_table_whose_data_are_not_staged_a_dry_run_warns(tmp_path,
                                                                           monkeypatch):
    """A real submit refuses in one line naming the fetch command (sbatch is never called);
    --dry-run writes and shows the script with the same line as a warning (issue 34)."""
    from .conftest import tiny_table
    path = tiny_table(tmp_path, extra="")
    text = path.read_text().replace('dataset = "digits"', 'dataset = "cifar10"\n'
                                    f'data_dir = "{tmp_path / "empty"}"')
    path.write_text(text.replace('model = "logistic"', 'model = "cnn3"'))
    env = {k: v for k, v in ENV.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    proc = _run(["tff_idp.slurm", "submit", str(path), "--scale", "paper"], env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "cifar10" in proc.stderr
    assert f"python -m tff_idp.data fetch {path}" in proc.stderr
    assert not (tmp_path / "results").exists()
    dry = _run(["tff_idp.slurm", "submit", str(path), "--scale", "paper", "--dry-run"],
               env=env)
    assert dry.returncode == 0, dry.stderr[-1500:]
    assert dry.stderr.startswith("warning: ") and f"data fetch {path}" in dry.stderr
    assert "#SBATCH --array=" in dry.stdout and "tff_idp.harness.task" in dry.stdout


def test_status_tells_running_from_stalled_by_the_heartbeat_and_says_the_round(table):
    import time
    spec = load_table(str(table))
    unit = expand(spec, "smoke")[0]
    partial = unit.folder.with_name(unit.folder.name + ".partial")
    partial.mkdir(parents=True)
    beat = partial / "heartbeat.json"
    old = time.time() - 3600
    beat.write_text(json.dumps({"time": old, "round_seconds": 30.0}))
    os.utime(beat, (old, old))
    os.utime(partial, (old, old))
    assert folder_state(unit) == "stalled"
    # a slow run: rounds of 40 minutes, last heartbeat an hour ago -> still running
    beat.write_text(json.dumps({"time": old, "round_seconds": 2400.0}))
    os.utime(beat, (old, old))
    os.utime(partial, (old, old))
    assert folder_state(unit) == "running"
    # no heartbeat, or one whose fields are no numbers: the folder's times alone decide
    for text in (None, json.dumps({"time": "soon", "round_seconds": 2400.0}), "[]"):
        if text is None:
            beat.unlink()
        else:
            beat.write_text(text)
            os.utime(beat, (old, old))
        os.utime(partial, (old, old))
        assert folder_state(unit) == "stalled", text
    os.utime(partial)                                   # the folder touched just now
    assert folder_state(unit) == "running"
    beat.write_text(json.dumps({"time": time.time(), "rounds_done": 1, "round_seconds": 30.0}))
    status = _run(["tff_idp.slurm", "status", str(table), "--scale", "smoke"])
    assert status.returncode == 0, status.stderr[-1500:]    # which round, and the time left
    assert f"  running: {unit.label} round 1/2 ~30 s left" in status.stdout.splitlines()


def _fake_result(unit, accuracy, curve, timing=None, privacy=None):
    unit.folder.mkdir(parents=True)
    (unit.folder / "config.json").write_text(json.dumps(
        {"fingerprint": run_fingerprint(unit.cfg, unit.method)}))
    (unit.folder / "summary.json").write_text(json.dumps(
        {"final_test_accuracy": accuracy, "seconds_total": 2.0, **(timing or {}),
         **({"privacy": privacy} if privacy else {})}))
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
    assert "Wall time" not in md            # summaries written before runs timed it


def test_report_cost_lines_add_up_each_runs_training_evaluation_and_start_up(table):
    from tff_idp.report import write_report
    spec = load_table(str(table))
    units = expand(spec, "paper")                    # 8 runs
    timing = {"seconds_setup": 1.5, "seconds_eval": 0.5, "seconds_wall": 4.0, "rounds": 3}
    cpu = {"host": "vm", "cpu": "AMD EPYC", "cores": 2, "ran_on": "cpu", "gpus": []}
    gpu = {"host": "node7", "boot": "b7", "cpu": "Xeon", "cores": 32, "ran_on": "gpu",
           "gpus": ["NVIDIA RTX A6000"]}
    for i, u in enumerate(units):
        segs = [  # two runs resumed on a second boot of one CPU machine; one run on a GPU
            [{"rounds": [1, 2], "seconds": 1.0, "machine": dict(cpu, boot="b1")},
             {"rounds": [3, 3], "seconds": 1.0, "machine": dict(cpu, boot="b2")}],
            [{"rounds": [1, 1], "seconds": 0.5, "machine": dict(cpu, boot="b1")},
             {"rounds": [2, 3], "seconds": 1.5, "machine": dict(cpu, boot="b2")}],
            [{"rounds": [1, 3], "seconds": 2.0, "machine": gpu}]]
        _fake_result(u, 0.5, [0.3, 0.4, 0.5],
                     dict(timing, **({"segments": segs[i]} if i < 3 else {})))
    md = write_report(spec, "paper").read_text()
    assert "Training time of the 8 complete runs at `paper` scale: 16 s" in md
    assert ("Wall time of those runs: 32 s: training 16 s, evaluation 4 s, start-up 12 s"
            in md)
    # the five runs without segments count as not recorded; a machine is a host and a boot
    assert ("Where they trained: 5 processes on 3 machines (one machine: one host and boot; "
            "summary.json: segments): 6 rounds, 4 s on AMD EPYC, 2 cores (2 machines); "
            "3 rounds, 2 s on NVIDIA RTX A6000 (1 machine); 15 rounds on machines not "
            "recorded (trained before segments were kept).") in md


def test_report_of_a_computed_table(tmp_path):
    from tff_idp.report import write_report
    spec = load_table(str(ROOT / "runs" / "gdpfed" / "figure1.toml"))
    md = write_report(spec, "paper", tmp_path / "fig1")
    text = md.read_text()
    assert "| 0.5 | 0.63 | 1.83 | 3.54 |" in text           # Problem 1 at FMNIST's epsilon_1
    assert (tmp_path / "fig1" / "rates.png").read_bytes()[:4] == b"\x89PNG"


def test_a_run_another_table_made_with_the_same_config_is_copied_not_trained(table, capfd,
                                                                             monkeypatch):
    """Table B shares its 1x column with table A (same settings, another name): those runs
    are copied from A's folders with REUSED.json; its 3x column is trained."""
    from tff_idp.harness.reuse import REUSED
    first = _run_here([str(table), "--scale", "smoke", "--quiet", "--methods", "p_fedavg",
                       "--no-report"], capfd, monkeypatch)
    assert first.returncode == 0, first.stderr[-1500:]
    other = table.with_name("other.toml")
    other.write_text(table.read_text().replace('name = "tiny"', 'name = "other"')
                     .replace('labels = ["1x", "2x"]', 'labels = ["1x", "3x"]')
                     .replace("values = [1.0, 2.0]", "values = [1.0, 3.0]"))
    second = _run_here([str(other), "--scale", "smoke", "--quiet", "--methods", "p_fedavg",
                        "--no-report"], capfd, monkeypatch)
    assert second.returncode == 0, second.stderr[-1500:]
    assert "other: 1 run copied from a complete run of the same config in tiny" in second.stderr
    assert "2 runs, 1 complete, 1 to run" in second.stderr           # counted after the copy
    a = {u.column: u for u in expand(load_table(str(table)), "smoke") if u.method == "p_fedavg"}
    b = {u.column: u for u in expand(load_table(str(other)), "smoke") if u.method == "p_fedavg"}
    copied = json.loads((b["1x"].folder / REUSED).read_text())
    assert copied["from"] == str(a["1x"].folder.resolve())
    assert (b["1x"].folder / "summary.json").read_text() == \
        (a["1x"].folder / "summary.json").read_text()
    assert not (b["3x"].folder / REUSED).exists() and not pending(list(b.values()))
    # a Slurm submission copies them too, and its array holds only what is left to train
    third = table.with_name("third.toml")
    third.write_text(table.read_text().replace('name = "tiny"', 'name = "third"'))
    sub = _run(["tff_idp.slurm", "submit", str(third), "--scale", "smoke", "--dry-run"])
    assert sub.returncode == 0, sub.stderr[-1500:]
    assert "third: 2 runs copied from complete runs of the same config in tiny" in sub.stderr
    assert "(2 of 4 units" in sub.stdout


def test_report_states_each_observers_epsilon(table):
    """Issue 33: the report's privacy section gives, per cell, the model viewers' epsilon and
    the server's (the largest over seeds) and which observer the budgets are met against."""
    from tff_idp.privacy.threat_model import guarantee
    from tff_idp.report import write_report
    spec = load_table(str(table))
    for u in expand(spec, "paper"):
        server = 2.0 + u.seed                           # seed 1 is the worse one
        draw = "client" if u.column == "1x" else "group"      # 2x: server-drawn noise
        groups = {str(g): {"budget": b, "realised_epsilon": b * 0.99,
                           **({"server_epsilon": server * (g + 1)} if draw == "client" else {})}
                  for g, b in enumerate([1.0, 2.0, 4.0])}
        privacy = None if u.method == "p_fedavg" else {
            "groups": groups, "sampling": "poisson",
            "guarantee": guarantee("poisson", draw, None, (), True, False)}
        plan = {"plan": {"rates": [0.1] * 3, "noise_multipliers_sq": [12.7, 2.65, 1.2],
                         "noise_magnitude": 5.5}} if u.column == "1x" else None
        _fake_result(u, 0.5, [0.3, 0.4, 0.5], timing=plan, privacy=privacy)
    md = write_report(spec, "paper").read_text()
    section = md.split("## Privacy, by observer")[1].split("## Cost")[0]
    assert "| digits | 1x | dp_fedavg | Poisson (add/remove one) | 1 / 2 / 4 | 10 / 10 / 10 | " \
           "12.7 / 2.65 / 1.2 | 5.5 | 0.99 / 1.98 / 3.96 | 3 / 6 / 9 |" in section
    assert "those who see the released models only; against the server the budget is " \
           "exceeded" in section
    assert "| digits | 2x | dp_fedavg | Poisson (add/remove one) | 1 / 2 / 4 | - | - | - | " \
           "0.99 / 1.98 / 3.96 | " \
           "none (server-drawn noise) | those who see the released models only |" in section
    assert "| p_fedavg |" not in section


def test_placement_overrides_train_into_the_tables_own_folders(table):
    """`--device`, `--set fast_chunk_size=...` and the other placement keys change where and
    how a run executes, not what it computes: the units keep the table's folders and
    fingerprints (a checkpoint resumes, a finished run stays finished); with a key that
    changes the computation the run goes to <scale>+<that key> only."""
    from tff_idp.harness.table import with_overrides
    spec = load_table(str(table))
    placed = with_overrides(spec, ["fast_chunk_size=4", 'device="cpu"', "checkpoint_every=2"])
    assert placed.out_root("smoke") == spec.out_root("smoke")
    plain = {u.label: u for u in expand(spec, "smoke")}
    units = expand(placed, "smoke")
    assert sorted(u.label for u in units) == sorted(plain)
    for u in units:
        assert u.cfg.fast_chunk_size == 4 and u.cfg.device == "cpu"
        assert u.folder == plain[u.label].folder
        assert run_fingerprint(u.cfg, u.method) == run_fingerprint(plain[u.label].cfg, u.method)
    mixed = with_overrides(spec, ["fast_chunk_size=4", "rounds=1"])
    assert mixed.out_root("smoke").name == "smoke+rounds_1"
    assert mixed.computing_overrides() == ["rounds=1"]


def test_set_and_backend_reach_every_unit_of_a_table_in_a_folder_of_their_own(tmp_path, capfd,
                                                                               monkeypatch):
    """Issue 34: `--set`, `--backend` apply to every cell; the runs' configs and fingerprints
    carry them, they go under <scale>+<overrides> (never mixed with the table as written),
    the report says what was changed, and the Slurm task lines carry the same items."""
    from tff_idp import run
    from tff_idp.harness.table import with_overrides
    from .conftest import tiny_table
    table = tiny_table(tmp_path, backend="tff")        # as written on the TFF backend
    monkeypatch.chdir(table.parent)
    assert run.main([str(table), "--scale", "smoke", "--quiet", "--methods", "p_fedavg",
                     "--set", "rounds=1", "--backend", "fast"]) == 0
    out = capfd.readouterr().out            # the results table, at the end of the run
    assert "| Dataset | Method | 1x | 2x |" in out and "| digits | p_fedavg |" in out
    spec = load_table(str(table))
    changed = with_overrides(spec, ["rounds=1", 'backend="fast"'])
    root = changed.out_root("smoke")
    assert root.name == "smoke+rounds_1_backend_fast" and not spec.out_root("smoke").exists()
    units = [u for u in expand(changed, "smoke") if u.method == "p_fedavg"]
    plain = {u.label: u for u in expand(spec, "smoke")}
    for u in units:
        cfg = json.loads((u.folder / "config.json").read_text())
        assert cfg["rounds"] == 1 and cfg["backend"] == "fast", cfg
        assert str(u.folder).startswith(str(root))
        assert run_fingerprint(u.cfg, "p_fedavg") != run_fingerprint(plain[u.label].cfg,
                                                                      "p_fedavg")
    report = (root / "report" / "report.md").read_text()
    assert "**Changed from the table as written**, in every run: `--set rounds=1`, " \
           '`--set backend="fast"`.' in report
    # the same items on a Slurm array task's command line, and a table-level key refused
    sub = _run(["tff_idp.slurm", "submit", str(table), "--scale", "smoke", "--dry-run",
                "--set", "rounds=1"])
    assert sub.returncode == 0, sub.stderr[-1500:]
    assert "--set rounds=1" in sub.stdout
    capfd.readouterr()
    assert run.main([str(table), "--scale", "smoke", "--set", "seed=3"]) == 2
    err = [l for l in capfd.readouterr().err.splitlines() if l.strip()]
    assert len(err) == 1 and "--set='seed=3': not for a table" in err[0]


def test_convergence_panels_are_a_grid_with_the_metric_named(tmp_path, monkeypatch):
    """Issue 34: many panels wrap into rows of three (paper 001's eight panels were one
    3696 x 418 row); personalised cells say so on the y axis; a run the ledger does not
    cover carries † in the legend; the paper's stars sit right of the last round, one step
    apart (issue 59: stars of close values at the last round hid each other), the x ticks
    within the rounds."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.image
    import matplotlib.pyplot as plt
    from tff_idp import report
    from .conftest import tiny_table
    spec = load_table(str(tiny_table(tmp_path)))
    labels = [f"D{i}" for i in range(5)]
    spec.datasets = {d: dict(spec.datasets["digits"]) for d in labels}
    spec.axis = None
    spec.reference = {"D0": {"p_fedavg": 70.0, "dp_fedavg": 70.5}}
    cell = lambda metric, uncovered: {"curves": [[50.0, 60.0, 65.0]], "notes": set(),
                                      "metric": metric, "not_covered": uncovered}
    cells = {(d, None, m): cell("personal_test_accuracy" if d == "D1" else "test_accuracy",
                                {"why"} if m == "dp_fedavg" else set())
             for d in labels for m in ("p_fedavg", "dp_fedavg")}
    seen = {}
    real_savefig = plt.Figure.savefig

    def keep(fig, path, **kw):
        seen["axes"] = [a for a in fig.axes if a.get_visible()]
        seen["legend"] = [t.get_text() for t in fig.legends[0].get_texts()]
        return real_savefig(fig, path, **kw)
    monkeypatch.setattr(plt.Figure, "savefig", keep)
    path = report.plot_convergence(spec, cells, tmp_path / "c.png", "paper")
    h, w = matplotlib.image.imread(path).shape[:2]
    assert h > 0.45 * w                                   # two rows of three, not one row
    ylabels = {a.get_title(): a.get_ylabel() for a in seen["axes"]}
    assert ylabels["D1"] == "personalised test accuracy (%)"
    assert ylabels["D0"] == "test accuracy (%)" and len(seen["axes"]) == 5
    assert "DP-FedAvg †" in seen["legend"] and "paper's final value" in seen["legend"]
    stars = [l for l in seen["axes"][0].get_lines() if l.get_marker() == "*"]
    xs = sorted(float(l.get_xdata()[0]) for l in stars)
    assert len(stars) == 2 and xs[0] > 3 and xs[1] - xs[0] > 0.79     # apart, after round 3
    assert max(seen["axes"][0].get_xticks()) <= 3
    assert seen["axes"][0].get_xlim()[1] > xs[1]                      # both inside the panel


def test_axis_panels_split_a_data_sets_columns_into_titled_panels(tmp_path, monkeypatch):
    """``[axis] panels``: a paper figure's (a) and (b) side by side (MS-PAFL's WOR and WR
    curves of a p nearly coincide: in one panel the later hid the earlier); a column may be
    in several panels (the baseline), and the legend names each curve once."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from tff_idp import report
    from .conftest import tiny_table
    path = tiny_table(tmp_path)
    path.write_text(path.read_text().replace(
        'values = [1.0, 2.0]', 'values = [1.0, 2.0]\n'
        'panels = { "(a) one" = ["1x"], "(b) both" = ["1x", "2x"] }'))
    spec = load_table(str(path))
    cells = {("digits", col, m): {"curves": [[50.0, 60.0]], "notes": set(),
                                  "metric": "test_accuracy", "not_covered": set()}
             for col in ("1x", "2x") for m in ("p_fedavg", "dp_fedavg")}
    seen = {}
    real_savefig = plt.Figure.savefig

    def keep(fig, out, **kw):
        seen["panels"] = {a.get_title(): [l.get_label() for l in a.get_lines()]
                          for a in fig.axes if a.get_visible()}
        seen["legend"] = [t.get_text() for t in fig.legends[0].get_texts()]
        return real_savefig(fig, out, **kw)
    monkeypatch.setattr(plt.Figure, "savefig", keep)
    report.plot_convergence(spec, cells, tmp_path / "c.png", "smoke")
    assert seen["panels"] == {
        "digits: (a) one": ["P-FedAvg, 1x", "DP-FedAvg, 1x"],
        "digits: (b) both": ["P-FedAvg, 1x", "DP-FedAvg, 1x", "P-FedAvg, 2x", "DP-FedAvg, 2x"]}
    assert seen["legend"] == ["P-FedAvg, 1x", "DP-FedAvg, 1x", "P-FedAvg, 2x", "DP-FedAvg, 2x"]
    # a panel none of whose runs is complete says so rather than showing empty 0-1 axes
    seen.clear()
    monkeypatch.setattr(plt.Figure, "savefig", lambda fig, out, **kw: (seen.update(texts={
        a.get_title(): [t.get_text() for t in a.texts] for a in fig.axes if a.get_visible()}),
        real_savefig(fig, out, **kw)))
    spec.axis.panels["(c) two"] = ["2x"]
    report.plot_convergence(spec, {k: v for k, v in cells.items() if k[1] == "1x"},
                            tmp_path / "d.png", "smoke")
    assert seen["texts"] == {"digits: (a) one": [], "digits: (b) both": [],
                             "digits: (c) two": ["no complete run yet"]}


def test_axis_trains_one_column_into_the_whole_tables_folders_and_reports_it(table, tmp_path,
                                                                             capfd, monkeypatch):
    """``run --axis 2x``: only that column's runs, in the folders the whole table's command
    resumes; ``report --axis 2x --report-dir`` reports that column alone; a choice that
    selects no run is one line, exit 2, before anything is written."""
    spec = load_table(str(table))
    table1 = ROOT / "runs" / "idp_fedavg" / "fmnist-table1.toml"    # 0-0-0 runs P-FedAvg only
    empty = _run_here([str(table1), "--scale", "paper", "--quiet", "--axis", "0-0-0",
                       "--methods", "idp_sample", "--output-dir", str(tmp_path / "none")],
                      capfd, monkeypatch)
    assert empty.returncode == 2 and empty.stderr.count("\n") == 1, empty.stderr
    assert "--axis='0-0-0' --methods='idp_sample': together select no run" in empty.stderr
    assert not (tmp_path / "none").exists()
    done = _run_here([str(table), "--scale", "smoke", "--quiet", "--axis", "2x", "--methods",
                      "p_fedavg", "--no-report"], capfd, monkeypatch)
    assert done.returncode == 0, done.stderr
    made = {u.label for u in expand(spec, "smoke") if unit_complete(u)}
    assert made == {"digits/2x/p_fedavg/seed0"}
    out = tmp_path / "rep"
    rep = _run(["tff_idp.report", str(table), "--scale", "smoke", "--axis", "2x",
                "--report-dir", str(out)])
    assert rep.returncode == 0, rep.stderr[-1500:]
    lines = (out / "report.md").read_text().splitlines()
    head = next(l for l in lines if l.startswith("| Dataset"))
    assert head == "| Dataset | Method | 2x |", head


def test_the_bar_of_worker_processes_names_each_running_units_round(table):
    from tff_idp.engine.checkpoint import write_heartbeat
    from tff_idp.harness.runner import rounds_of
    units = expand(load_table(str(table)), "smoke")[:2]
    partial = units[0].folder.with_name(units[0].folder.name + ".partial")
    partial.mkdir(parents=True)
    write_heartbeat(partial, 1, 150.0)             # smoke: 2 rounds; 1 left at 150 s
    assert units[0].cfg.rounds == 2
    assert rounds_of(units) == (f"{units[0].label} round 1/2 ~3 min left, "
                                f"{units[1].label} starting")
    write_heartbeat(partial, 1, 40.2)
    assert rounds_of(units[:1]) == f"{units[0].label} round 1/2 ~41 s left"
    write_heartbeat(partial, 0, 7300.0)
    assert rounds_of(units[:1]) == f"{units[0].label} round 0/2 ~4.1 h left"
    write_heartbeat(partial, 1, 7300.0, mean_round_seconds=50.0)     # the mean when there
    assert rounds_of(units[:1]) == f"{units[0].label} round 1/2 ~50 s left"
    (partial / "heartbeat.json").write_text("{not json")
    assert rounds_of(units[:1]) == f"{units[0].label} starting"
    (partial / "heartbeat.json").unlink()
    (partial / "summary.json").write_text("{}")
    partial.rename(units[0].folder)          # complete (renamed), its process not yet ended
    assert rounds_of(units[:1]) == f"{units[0].label} done"
    partial.mkdir()                          # --force: trained again beside the complete one
    assert rounds_of(units[:1]) == f"{units[0].label} starting"


def test_slurm_submit_takes_only_axis_and_methods_with_whole_table_indices(table):
    """Issue 34: --methods / --only (and --axis) restrict the array to those units; each
    array index is still the unit's index in the whole table, which is what the task
    expands."""
    whole = expand(load_table(str(table)), "smoke")
    want = [i for i, u in enumerate(whole) if u.method == "dp_fedavg"]
    sub = _run(["tff_idp.slurm", "submit", str(table), "--scale", "smoke", "--dry-run",
                "--methods", "dp_fedavg", "--only", "digits"])
    assert sub.returncode == 0, sub.stderr[-1500:]
    array = next(l for l in sub.stdout.splitlines() if l.startswith("#SBATCH --array="))
    assert len(want) == 2 and array == "#SBATCH --array=" + ",".join(map(str, want)), array
    col = [i for i, u in enumerate(whole) if u.method == "dp_fedavg" and u.column == "2x"]
    sub = _run(["tff_idp.slurm", "submit", str(table), "--scale", "smoke", "--dry-run",
                "--methods", "dp_fedavg", "--axis", "2X"])
    assert sub.returncode == 0, sub.stderr[-1500:]
    array = next(l for l in sub.stdout.splitlines() if l.startswith("#SBATCH --array="))
    assert len(col) == 1 and array == f"#SBATCH --array={col[0]}", array
    helptext = _run(["tff_idp.slurm", "--help"]).stdout
    assert "(default 4)" in helptext and "(default 32G)" in helptext


def test_replot_redraws_the_figure_from_the_reports_curves_alone(table, tmp_path):
    from tff_idp import report
    spec = load_table(str(table))
    units = expand(spec, "paper")
    for u in units:
        _fake_result(u, 0.5 + 0.1 * u.seed, [0.3, float("nan"), 0.5 + 0.1 * u.seed])
    out = tmp_path / "rep"
    report.write_report(spec, "paper", out)
    rows = list(csv.DictReader(open(out / "curves.csv")))
    assert len(rows) == 3 * len(units) and {r["accuracy"] for r in rows if r["round"] == "2"} == {""}
    cells = report.collect(units)
    back = report.cells_from_curves(out / "curves.csv", spec)
    assert set(back) == set(cells)
    for key, c in cells.items():             # the same curves, seed by seed, nan kept
        np.testing.assert_allclose(back[key]["curves"], c["curves"], equal_nan=True)
        assert back[key]["metric"] == c["metric"]
    for u in units:                          # the results go; the figure is redrawn
        shutil.rmtree(u.folder)
    (out / "convergence.png").unlink()
    args = ["tff_idp.report", str(table), "--scale", "paper", "--report-dir", str(out)]
    done = _run(args + ["--replot"])
    assert done.returncode == 0, done.stderr
    assert (out / "convergence.png").read_bytes()[:4] == b"\x89PNG"
    (out / "curves.csv").unlink()
    refused = _run(args + ["--replot"])
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "curves.csv does not exist" in refused.stderr and not (out / "curves.csv").exists()


def test_archived_runs_regenerate_the_report_and_are_not_trained_again(table_in_runs, tmp_path,
                                                                       capfd, monkeypatch):
    """A table under a runs/ folder: ``report --archive`` copies its complete runs into
    runs/archive/; with the results folder gone (a fresh clone), ``report`` redraws the same
    table from the archive and ``run`` trains only what was never archived."""
    from tff_idp.harness.archive import archive_root
    from tff_idp.harness.reuse import REUSED
    table, runs = table_in_runs, tmp_path / "runs"
    first = _run_here([str(table), "--scale", "smoke", "--quiet", "--no-report"], capfd,
                      monkeypatch)
    assert first.returncode == 0, first.stderr[-1500:]
    spec = load_table(str(table))
    units = expand(spec, "smoke")
    made = _run(["tff_idp.report", str(table), "--scale", "smoke", "--archive"])
    assert made.returncode == 0, made.stderr[-1500:]
    archive = archive_root(spec)
    assert archive == runs / "archive" and "archived 2 run(s)" in made.stderr
    archived = sorted(p.parent for p in (archive / "tiny").glob("**/summary.json"))
    assert len(archived) == 2 and not any((p / REUSED).exists() for p in archived)
    assert sorted(p.name for p in archived[0].iterdir()) == [
        "config.json", "files.sha256", "ledger.csv", "metrics.csv", "observers.json",
        "server.csv", "summary.json"]
    report = (spec.out_root("smoke") / "report" / "report.md").read_text()
    again = _run(["tff_idp.report", str(table), "--scale", "smoke", "--archive"])
    assert again.returncode == 0 and "archived 0 run(s)" in again.stderr   # nothing new
    # a fresh machine: no results folder; the report is the same, no run is trained
    shutil.rmtree(tmp_path / "runs" / "results")
    redo = _run(["tff_idp.report", str(table), "--scale", "smoke"])
    assert redo.returncode == 0, redo.stderr[-1500:]
    assert "2 runs copied from complete runs of the same config in tiny (archived in" \
        in redo.stderr
    assert (spec.out_root("smoke") / "report" / "report.md").read_text() == report
    assert json.loads((units[0].folder / REUSED).read_text())["from"].startswith(str(archive))
    # a column never archived (a new clip scale) is the only run trained
    table.write_text(table.read_text().replace('labels = ["1x", "2x"]', 'labels = ["1x", "3x"]')
                     .replace("values = [1.0, 2.0]", "values = [1.0, 3.0]"))
    shutil.rmtree(tmp_path / "runs" / "results")
    grown = _run_here([str(table), "--scale", "smoke", "--quiet", "--no-report"], capfd,
                      monkeypatch)
    assert grown.returncode == 0, grown.stderr[-1500:]
    assert "1 run copied from a complete run of the same config in tiny (archived in" \
        in grown.stderr and "2 runs, 1 complete, 1 to run" in grown.stderr


def test_report_archive_refuses_a_config_outside_runs(table):
    out = _run(["tff_idp.report", str(table), "--scale", "smoke", "--archive"])
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("error: --archive: ") and str(table) in out.stderr


def test_a_setup_line_that_fails_is_a_warning_not_every_tasks_death(table, tmp_path):
    """Issue 62 item 6: under set -euo pipefail a module the cluster lacks killed every task;
    now the script says so in one line and the task runs (CUDA comes from pip with GPU=1: no
    module is needed). The time limit says which device it assumes."""
    proc = _run(["tff_idp.slurm", "submit", str(table), "--scale", "smoke", "--dry-run",
                 "--gres", "", "--setup", "module load no-such-module"])
    assert proc.returncode == 0, proc.stderr
    assert "the cost model's slowest unit on one NVIDIA RTX A6000" in proc.stdout
    script = load_table(str(table)).out_root("smoke") / "slurm" / "array.sbatch"
    env = dict(_fake_slurm(tmp_path), SLURM_ARRAY_TASK_ID="0", SLURM_ARRAY_JOB_ID="78")
    (tmp_path / "fakebin" / "module").write_text("#!/bin/bash\nexit 1\n")   # no such module
    ran = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-1500:]
    assert "warning: --setup line failed: module load no-such-module" in ran.stderr
