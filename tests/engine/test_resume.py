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


def _args(out, method, extra=()):
    return ["--quiet", "--set", f"output_dir=\"{out}\"", "--set", f"methods=[\"{method}\"]",
            "--set", "rounds=4", "--set", "num_clients=60", "--set", "checkpoint_every=1",
            "--set", "expected_rate=0.2", "--set", "name=\"resume\""] + \
        [a for kv in extra for a in ("--set", kv)]


def _cmd(out, method, extra=()):
    return [sys.executable, "-m", "tff_idp.run"] + _args(out, method, extra)


def _metrics(out, method):
    """Every column but the timing (the personalised ones too, for a method that has them)."""
    with open(out / "resume" / f"{method}-seed0" / "metrics.csv") as f:
        return [{k: v for k, v in r.items() if k not in ("seconds", "eval_seconds")}
                for r in csv.DictReader(f)]


@pytest.mark.parametrize("method,extra", [
    # the TFF backend's server state: GroupGaussianFactory's, adaptive clipping's included
    # (GDPFed+ on the TFF backend, the same factory without adaptive clipping, was a case of
    # its own until the suite outgrew 20 minutes)
    ("idp_fedavg", ()),
    # the fast backend with server-drawn noise: the round count in the aggregator state
    ("gdpfed_plus", ('backend="fast"', 'noise_draw="group"')),
    # personal state: every client's head is in the checkpoint (TFF backend: CLIENTS-placed)
    ("dp_fedrep", ('model="digits_mlp"', 'partition="classes"', "partition_param=3")),
    # paper 001: DP-pFedDSU's heads, its validation split and best-validation reporting
    ("dp_pfeddsu", ('model="digits_mlp"', 'partition="dealt_classes"', "partition_param=3",
                    "dsu_layers=1", "head_epochs=2", "local_epochs=1", "batch_size=16",
                    "validation_fraction=0.1", "group_ratios=[1.0]", "budgets=[2.0]",
                    "num_clients=8", "expected_rate=1.0", 'backend="fast"')),
    # Shakespeare's LSTM on the fast backend (the recurrence's hand-written gradient), its
    # curve evaluated on a subset and the last round on the whole (small) test set
    ("dp_fedavg", ('dataset="synthetic:shakespeare-leaf"', 'model="char_lstm"', "rounds=3",
                   "num_clients=8", "expected_rate=0.4", "local_steps=1", "batch_size=4",
                   "momentum=0.9", "test_examples=32", "curve_test_examples=16",
                   'backend="fast"'))])
def test_sigkill_then_rerun_equals_uninterrupted(tmp_path, monkeypatch, method, extra):
    from tff_idp import run
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    # the uninterrupted run in this process (the same code as the command's; one start-up
    # of TensorFlow fewer), the killed and the resumed ones as the commands a user gives
    monkeypatch.chdir(ROOT)
    assert run.main(_args(whole, method, extra)) == 0
    ckpt = killed / "resume" / f"{method}-seed0.partial" / "checkpoint.npz"
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
    # the killed process's rounds up to its checkpoint, then the resuming process's
    k = summary["resumed_from_round"]
    assert [s["rounds"] for s in summary["segments"]] == [[1, k], [k + 1, summary["rounds"]]]
    assert _metrics(killed, method) == _metrics(whole, method)
    if method in ("dp_fedrep", "dp_pfeddsu"):
        assert "personal_test_accuracy" in _metrics(whole, method)[-1]
    assert not (killed / "resume" / f"{method}-seed0" / "checkpoint.npz").exists()


def _checkpoint(tmp_path, cfg_overrides=()):
    """A real checkpoint after 2 of 3 rounds of p_fedavg, in tmp_path/partial."""
    from tff_idp import experiment_config
    from tff_idp.engine.experiment import prepare
    from tff_idp.engine.loop import run_method
    exp = prepare(experiment_config.load(None, ['methods=["p_fedavg"]', "rounds=3", "num_clients=30",
                                     "checkpoint_every=2", 'backend="fast"',
                                     *cfg_overrides]))
    folder = tmp_path / "partial"
    folder.mkdir()
    rows, _, _ = run_method(exp, "p_fedavg", progress=False, checkpoint_dir=folder)
    return exp, folder, rows


def test_a_checkpoint_of_another_config_is_set_aside(tmp_path, capfd):
    from tff_idp import experiment_config
    from tff_idp.engine.checkpoint import load_checkpoint
    from tff_idp.engine.fingerprint import run_fingerprint
    exp, folder, _ = _checkpoint(tmp_path)
    assert load_checkpoint(folder, run_fingerprint(exp.cfg, "p_fedavg"))["rounds_done"] == 2
    other = experiment_config.load(None, ['methods=["p_fedavg"]', "rounds=3", "num_clients=30",
                               "clip=2.0"])
    assert load_checkpoint(folder, run_fingerprint(other, "p_fedavg")) is None
    assert "checkpoint at round 2 was made with another config: starting over" in \
        capfd.readouterr().err
    assert (folder / "checkpoint.npz.bad").is_file() and not (folder / "checkpoint.npz").exists()
    c = experiment_config.load(None, ['methods=["p_fedavg"]', "rounds=3", "output_dir=\"x\""])
    d = experiment_config.load(None, ['methods=["p_fedavg"]', "rounds=3"])
    assert run_fingerprint(c, "p_fedavg") == run_fingerprint(d, "p_fedavg")


def test_a_checkpoint_whose_backend_state_does_not_fit_starts_over(tmp_path, capfd):
    """A checkpoint of the same config whose backend state has other arrays (made by another
    process, e.g. the TFF backend's iterative process before FedAvg rounds ran the library's
    LearningProcess) is not half-restored: the run says so and starts over."""
    from tff_idp.engine.checkpoint import load_checkpoint, save_checkpoint
    from tff_idp.engine.fingerprint import run_fingerprint
    from tff_idp.engine.loop import run_method
    exp, folder, rows = _checkpoint(tmp_path)
    fingerprint = run_fingerprint(exp.cfg, "p_fedavg")
    saved = load_checkpoint(folder, fingerprint)
    save_checkpoint(folder, fingerprint, dict(saved, backend=list(saved["backend"])[:-1]))
    again, summary, _ = run_method(exp, "p_fedavg", progress=False, checkpoint_dir=folder)
    assert "does not fit this run" in capfd.readouterr().err
    assert summary.resumed_from_round is None
    assert [r["test_accuracy"] for r in again] == [r["test_accuracy"] for r in rows]


@pytest.mark.parametrize("damage,line", [
    (lambda b: b[: len(b) // 2], "checkpoint unreadable"),                 # truncated
    (lambda b: b"", "checkpoint unreadable"),                             # empty
    (lambda b: b"\x80\x04K\x01." + b[5:], "checkpoint unreadable"),      # foreign
])
def test_a_broken_checkpoint_is_set_aside_and_the_run_starts_over(tmp_path, capfd, damage,
                                                                   line):
    from tff_idp.engine.loop import run_method
    exp, folder, rows = _checkpoint(tmp_path)
    path = folder / "checkpoint.npz"
    path.write_bytes(damage(path.read_bytes()))
    again, summary, _ = run_method(exp, "p_fedavg", progress=False, checkpoint_dir=folder)
    assert line in capfd.readouterr().err
    assert summary.resumed_from_round is None
    assert [r["test_accuracy"] for r in again] == [r["test_accuracy"] for r in rows]


def test_a_flipped_bit_fails_the_checksum(tmp_path, capfd):
    """One changed value inside an intact npz (here a client's participation count) is not
    used: the checksum fails and the run starts over."""
    import numpy as np
    from tff_idp.engine.checkpoint import load_checkpoint
    from tff_idp.engine.fingerprint import run_fingerprint
    exp, folder, _ = _checkpoint(tmp_path)
    path = folder / "checkpoint.npz"
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["participation"][3] += 16711680
    np.savez(path, **arrays)
    assert load_checkpoint(folder, run_fingerprint(exp.cfg, "p_fedavg")) is None
    assert "checkpoint at round 2 fails its checksum: starting over" in capfd.readouterr().err


def test_an_old_pickle_checkpoint_is_never_unpickled(tmp_path, capfd):
    import pickle
    from tff_idp.engine.loop import load_checkpoint

    class Boom:
        def __reduce__(self):
            return (exec, ("raise SystemExit('unpickled')",))

    (tmp_path / "checkpoint.pkl").write_bytes(pickle.dumps(Boom()))
    assert load_checkpoint(tmp_path, "any") is None
    assert "old-format checkpoint (pickle) is not read" in capfd.readouterr().err


def test_a_key_spelled_out_at_the_methods_default_is_the_same_run():
    """Table VIII's (0.7, 0.8, 0.9) row of GDPFed+ is Table II's GDPFed+ (keep_fractions
    unset): one fingerprint, so the harness trains it once; any other fractions differ."""
    from tff_idp import experiment_config
    from tff_idp.engine.loop import run_fingerprint
    base = ['methods=["gdpfed_plus"]', "rounds=3"]
    unset = run_fingerprint(experiment_config.load(None, base), "gdpfed_plus")
    spelled = experiment_config.load(None, base + ["keep_fractions=[0.7, 0.8, 0.9]"])
    other = experiment_config.load(None, base + ["keep_fractions=[0.5, 0.7, 0.9]"])
    assert run_fingerprint(spelled, "gdpfed_plus") == unset
    assert run_fingerprint(other, "gdpfed_plus") != unset
