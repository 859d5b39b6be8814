"""Where a run's time goes: each round's training and evaluation in metrics.csv, the set-up
and the wall time in the summary (what the tables' cost lines add up)."""
import csv
import json
import time

import pytest


def test_the_summary_accounts_for_training_evaluation_and_set_up(tmp_path):
    from tff_idp import experiment_config
    from tff_idp.engine.experiment import prepare
    from tff_idp.engine.persist import train_to_folder
    exp = prepare(experiment_config.load(None, ['methods=["p_fedavg"]', "rounds=3", "num_clients=30",
                                     "eval_every=2", 'backend="fast"']))
    # as the harness does: the clock started before the data were prepared (5 s here)
    summary = train_to_folder(exp, "p_fedavg", tmp_path / "run", progress=False,
                              started=time.perf_counter() - 5.0)
    with open(tmp_path / "run" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    # rounds 2 and 3 are evaluated (every 2nd, and the last); round 1 has blank columns
    assert [r["test_accuracy"] != "" for r in rows] == [False, True, True]
    assert rows[0]["eval_seconds"] == "" and all(float(r["eval_seconds"]) > 0 for r in rows[1:])
    train = sum(float(r["seconds"]) for r in rows)
    evals = sum(float(r["eval_seconds"]) for r in rows[1:])
    assert summary.seconds_total == pytest.approx(train, abs=1e-3)
    assert summary.seconds_eval == pytest.approx(evals, abs=1e-3)
    assert summary.seconds_setup >= 5.0
    assert summary.seconds_wall == pytest.approx(
        train + evals + summary.seconds_setup, abs=1e-3)
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == summary.to_dict()
    # one process trained it: one segment, the rounds' own seconds, this machine
    (seg,) = summary.segments
    assert seg["rounds"] == [1, 3] and seg["seconds"] == pytest.approx(train, abs=1e-3)
    assert seg["eval_seconds"] == pytest.approx(evals, abs=1e-3) and seg["cpu_seconds"] > 0
    assert seg["machine"] == summary.machine and seg["machine"]["cores"] >= 1
    # its own peak memory: at least the process's size now, far below an earlier larger peak
    assert summary.peak_memory_scope == "run"
    assert summary.peak_memory_bytes >= 100 * 2 ** 20


def test_the_peak_memory_is_the_runs_own_after_a_reset():
    import numpy as np
    from tff_idp.engine.memory import peak_rss_bytes, reset_peak_rss
    big = np.ones(400 * 2 ** 20 // 8)            # 400 MB resident, then freed
    high = peak_rss_bytes()
    del big
    assert reset_peak_rss()
    after = peak_rss_bytes()
    assert high - after > 300 * 2 ** 20
    small = np.ones(100 * 2 ** 20 // 8)
    assert peak_rss_bytes() - after > 80 * 2 ** 20
    del small


def test_a_run_resumed_from_rows_without_evaluation_times_reports_no_wall_time(tmp_path,
                                                                               monkeypatch):
    """A checkpoint written before evaluations were timed: the summary says nothing of
    evaluation or wall time rather than a part of them (and the report leaves its line out)."""
    from tff_idp import experiment_config
    from tff_idp.engine import loop
    from tff_idp.engine.experiment import prepare
    exp = prepare(experiment_config.load(None, ['methods=["p_fedavg"]', "rounds=3", "num_clients=30",
                                     "checkpoint_every=2", 'backend="fast"']))
    rows, whole, _ = loop.run_method(exp, "p_fedavg", progress=False, checkpoint_dir=tmp_path)
    assert whole.seconds_wall is not None and "eval_seconds" in rows[0]
    real = loop.load_checkpoint

    def old_checkpoint(folder, fingerprint):
        state = real(folder, fingerprint)
        state["rows"] = [{k: v for k, v in r.items() if k != "eval_seconds"}
                         for r in state["rows"]]
        return state

    monkeypatch.setattr(loop, "load_checkpoint", old_checkpoint)
    _, resumed, _ = loop.run_method(exp, "p_fedavg", progress=False, checkpoint_dir=tmp_path)
    assert resumed.resumed_from_round == 2
    assert resumed.seconds_eval is None and resumed.seconds_wall is None


def test_a_resumed_run_says_which_process_and_machine_trained_which_rounds(tmp_path,
                                                                           monkeypatch):
    """The segments travel in the checkpoint: a run resumed at round 2 has the first
    process's rounds 1-2 and its own round 3, their seconds the rows'; resumed from a
    checkpoint made before segments were kept, rounds 1-2 have no machine."""
    from tff_idp import experiment_config
    from tff_idp.engine import loop
    from tff_idp.engine.experiment import prepare
    exp = prepare(experiment_config.load(None, ['methods=["p_fedavg"]', "rounds=3", "num_clients=30",
                                     "checkpoint_every=2", 'backend="fast"']))
    first_rows, first, _ = loop.run_method(exp, "p_fedavg", progress=False,
                                           checkpoint_dir=tmp_path)
    rows, resumed, _ = loop.run_method(exp, "p_fedavg", progress=False, checkpoint_dir=tmp_path)
    assert resumed.resumed_from_round == 2
    before, mine = resumed.segments
    assert before["rounds"] == [1, 2] and mine["rounds"] == [3, 3]
    assert before["seconds"] == pytest.approx(sum(r["seconds"] for r in first_rows[:2]),
                                              abs=1e-3)
    assert before["machine"] == first.machine and mine["machine"] == resumed.machine
    assert before["seconds"] + mine["seconds"] == pytest.approx(resumed.seconds_total,
                                                                 abs=1e-3)
    real = loop.load_checkpoint

    def old_checkpoint(folder, fingerprint):
        state = real(folder, fingerprint)
        state["segments"] = None
        return state

    monkeypatch.setattr(loop, "load_checkpoint", old_checkpoint)
    _, resumed, _ = loop.run_method(exp, "p_fedavg", progress=False, checkpoint_dir=tmp_path)
    before, mine = resumed.segments
    assert before["rounds"] == [1, 2] and before["machine"] is None
    assert before["cpu_seconds"] is None and mine["rounds"] == [3, 3]


@pytest.mark.parametrize("segments", [
    None, [], "garbage", [{"rounds": [3, 1], "machine": None}], [{"machine": None}],
    [{"rounds": [1, 3], "seconds": "slow", "machine": None}],
    [{"rounds": [1, 3], "seconds": 2.0, "machine": {"gpus": [1]}}]])
def test_a_summary_without_readable_segments_counts_as_one_unrecorded_segment(segments):
    """Summaries from before segments were kept, or with a malformed list, never break a
    report: all the run's rounds on a machine not recorded."""
    from tff_idp.engine.segments import of_summary, summarise
    from tff_idp.results import RunSummary
    s = RunSummary(rounds=3, seconds_total=2.0, segments=segments)
    assert of_summary(s) == [{"rounds": [1, 3], "seconds": 2.0, "machine": None}]
    assert summarise([of_summary(s)]) == {"processes": 0, "machines": 0,
                                          "unrecorded_rounds": 3, "kinds": {}}


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_setaffinity"), reason="no CPU affinity")
def test_a_process_pinned_to_one_core_records_one_core():
    """A Slurm job's cpuset or ``taskset`` leaves a process fewer cores than the machine
    has, and TensorFlow sizes its thread pools by them: the timing's record says how many
    it could use (``cores``) beside the machine's (``host_cores``), and the cost preview
    matches runs by the former."""
    import os
    import subprocess
    import sys
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "from tff_idp.engine.segments import machine, kind; m = machine('cpu'); "
            "print(m['cores'], m['host_cores'], kind(m))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    cores, host_cores, kind = done.stdout.split(" ", 2)
    assert (int(cores), int(host_cores)) == (1, os.cpu_count())
    assert kind.strip().endswith(", 1 cores")
