"""A run killed with SIGKILL and restarted with the same command resumes from its last
checkpoint and ends with exactly the metrics of an uninterrupted run."""
import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _cmd(out, method, extra=()):
    return [sys.executable, "-m", "tff_idp.run", "--quiet", "--set", f"output_dir=\"{out}\"",
            "--set", f"methods=[\"{method}\"]", "--set", "rounds=8", "--set", "num_clients=60",
            "--set", "checkpoint_every=1", "--set", "expected_rate=0.2", "--set",
            "name=\"resume\""] + [a for kv in extra for a in ("--set", kv)]


def _metrics(out, method):
    """Every column but the timing (the personalised ones too, for a method that has them)."""
    with open(out / "resume" / f"{method}-seed0" / "metrics.csv") as f:
        return [{k: v for k, v in r.items() if k != "seconds"} for r in csv.DictReader(f)]


@pytest.mark.parametrize("method,extra", [
    ("gdpfed_plus", ()), ("idp_fedavg", ()),
    # the fast backend with server-drawn noise: the round count in the aggregator state
    ("gdpfed_plus", ('backend="fast"', 'noise_draw="group"')),
    # personal state: every client's head is in the checkpoint (TFF backend: CLIENTS-placed)
    ("dp_fedrep", ('model="digits_mlp"', 'partition="classes"', "partition_param=3"))])
def test_sigkill_then_rerun_equals_uninterrupted(tmp_path, method, extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    subprocess.run(_cmd(whole, method, extra), cwd=ROOT, env=env, check=True, capture_output=True,
                   timeout=300)
    ckpt = killed / "resume" / f"{method}-seed0.partial" / "checkpoint.pkl"
    proc = subprocess.Popen(_cmd(killed, method, extra), cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 240
    while not ckpt.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert ckpt.exists(), "no checkpoint appeared"
    os.killpg(proc.pid, signal.SIGKILL)          # the run and its TFF worker
    proc.wait()
    assert not (killed / "resume" / f"{method}-seed0").exists()   # never reported complete
    done = subprocess.run(_cmd(killed, method, extra), cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    import json
    summary = json.loads((killed / "resume" / f"{method}-seed0" / "summary.json").read_text())
    assert summary["resumed_from_round"] is not None and summary["resumed_from_round"] >= 1
    assert _metrics(killed, method) == _metrics(whole, method)
    if method == "dp_fedrep":
        assert "personal_test_accuracy" in _metrics(whole, method)[-1]
    assert not (killed / "resume" / f"{method}-seed0" / "checkpoint.pkl").exists()


def test_a_checkpoint_of_another_config_is_not_resumed(tmp_path):
    from tff_idp import config
    from tff_idp.engine.experiment import prepare
    from tff_idp.engine.loop import load_checkpoint, run_fingerprint, save_checkpoint
    a = prepare(config.load(None, ["methods=[\"p_fedavg\"]", "rounds=3"]))
    b = prepare(config.load(None, ["methods=[\"p_fedavg\"]", "rounds=3", "clip=2.0"]))
    save_checkpoint(tmp_path, {"fingerprint": run_fingerprint(a.cfg, "p_fedavg"), "rounds_done": 1})
    assert load_checkpoint(tmp_path, run_fingerprint(a.cfg, "p_fedavg"))["rounds_done"] == 1
    assert load_checkpoint(tmp_path, run_fingerprint(b.cfg, "p_fedavg")) is None
    c = prepare(config.load(None, ["methods=[\"p_fedavg\"]", "rounds=3", "output_dir=\"x\""]))
    assert run_fingerprint(c.cfg, "p_fedavg") == run_fingerprint(a.cfg, "p_fedavg")
