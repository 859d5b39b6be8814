"""python -m tff_idp.run as a user runs it: bad input exits 2 with one line, before any work;
a small run writes a complete results folder and leaves no TFF worker behind."""
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(args, cwd, timeout=600, **extra_env):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT), **extra_env)
    return subprocess.run([sys.executable, "-m", "tff_idp.run", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


BAD = [   # through the real process (every case in-process: tests/test_bad_inputs.py)
    (["--set", "methods=[\"fedprox\"]"], "methods='fedprox'"),
    (["missing.toml"], "config='missing.toml': no such file"),
    (["fifo"], "config='fifo': is not a regular file"),
    (["--set", "noise_multipliers=[nan, 2.0, 2.0]"], "noise_multipliers=[nan, 2.0, 2.0]: must be finite"),
    (["--set", "methods=[\"ms_pafl\"]", "--set", "local_epsilon=1.0", "--set",
      "model=\"logistic_nobias\""], "data_sampling='wor': local_steps x batch_size = 50"),
]

@pytest.mark.parametrize("args,needle", BAD)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, needle):
    (tmp_path / "bad.toml").write_text("rounds = = 3\n")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    extra = [] if any("output_dir" in a for a in args) else ["--set", "output_dir=\"out\""]
    proc = _run(args + extra, tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], lines
    assert not (tmp_path / "out").exists() and not (tmp_path / "results").exists()
    assert not (tmp_path / "datasets").exists()      # no partition cached either


def test_help_documents_the_config_keys(tmp_path):
    proc = _run(["--help"], tmp_path, timeout=60)
    assert proc.returncode == 0
    for key in ("budgets", "group_ratios", "keep_fractions", "calibration_tolerance",
                "expected_rate", "sampling", "accountant"):
        assert key in proc.stdout


def _workers(marker: str):
    """Live TFF workers started under ``marker`` (an environment variable the worker inherits):
    only this test's run, never a concurrent test's (whose killed runs orphan workers for a
    moment too)."""
    out = subprocess.run(["pgrep", "-f", "worker_binary"], capture_output=True, text=True)
    mine = []
    for pid in out.stdout.split():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in environ and state != "Z":
            mine.append(pid)
    return mine


def test_small_run_writes_results_and_closes_tff(tmp_path):
    tag = f"{tmp_path.name}-{os.getpid()}"
    cfg = tmp_path / "tiny.toml"
    cfg.write_text('name = "tiny"\nmethods = ["dp_fedavg", "gdpfed_plus", "idp_fedavg"]\n'
                   'rounds = 2\n'
                   'num_clients = 60\nexpected_rate = 0.2\nbudgets = [1.0, 2.0, 4.0]\n'
                   'output_dir = "out"\nlocal_steps = 2\n')
    proc = _run([str(cfg), "--quiet"], tmp_path, TFF_IDP_TEST_RUN=tag)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "gdpfed_plus" in proc.stdout and "test_acc_%" in proc.stdout
    for method in ("dp_fedavg", "gdpfed_plus", "idp_fedavg"):
        folder = tmp_path / "out" / "tiny" / f"{method}-seed0"
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["privacy"]["within_budget"]
        rows = list(csv.DictReader((folder / "metrics.csv").open()))
        assert len(rows) == 2 and 0 <= float(rows[-1]["test_accuracy"]) <= 1
        ledger = list(csv.DictReader((folder / "ledger.csv").open()))
        assert len(ledger) == 60
        assert all(float(r["epsilon_model_viewers"]) <= float(r["budget_epsilon"]) *
                   (1 + 1e-6) for r in ledger)
        config = json.loads((folder / "config.json").read_text())
        assert config["local_steps"] == 2 and config["method"] == method
    assert not list((tmp_path / "out" / "tiny").glob("*.partial"))
    plot = tmp_path / "out" / "tiny" / "convergence-seed0.png"     # said where, at the end
    assert plot.read_bytes()[:4] == b"\x89PNG" and f"convergence plot {Path('out')}" in \
        proc.stdout.replace(str(tmp_path) + "/", "")
    assert _workers(f"TFF_IDP_TEST_RUN={tag}") == []      # the run has exited: its TFF worker must be gone too


@pytest.mark.parametrize("sig,grace", [("SIGTERM", 0.5), ("SIGKILL", 5.0)])
def test_a_stopped_run_leaves_no_tff_worker(tmp_path, sig, grace):
    """kill / timeout / Slurm send SIGTERM: the run stops its TFF worker on the way out.
    SIGKILL runs no exit code: the worker dies by itself (its parent-death signal)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-m", "tff_idp.run", "--quiet", "--set",
                             "rounds=400", "--set", "methods=[\"dp_fedavg\"]", "--set",
                             f"output_dir=\"{tmp_path}\""], cwd=root,
                            env=dict(os.environ, PYTHONPATH=str(root)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def workers():
        out = subprocess.run(["pgrep", "-P", str(proc.pid), "-f", "worker_binary"],
                             capture_output=True, text=True).stdout.split()
        return [int(p) for p in out]

    deadline = time.time() + 120
    while not workers() and time.time() < deadline:
        time.sleep(0.2)
    started = workers()
    assert started, "the run never started a TFF worker"
    time.sleep(1.0)
    proc.send_signal(getattr(signal, sig))
    proc.wait(timeout=60)
    time.sleep(grace)
    alive = [p for p in started if os.path.exists(f"/proc/{p}") and
             b"worker_binary" in open(f"/proc/{p}/cmdline", "rb").read()]
    assert not alive, f"orphaned TFF workers {alive}"


def test_a_fast_run_never_imports_tff(tmp_path):
    """The fast backend runs each method's query (``Method.aggregation_query``, TensorFlow
    without TFF); the TFF factory is built only for the TFF backend, so a fast run's process
    never imports TensorFlow Federated (1.3-2.3 s of every such process here), whatever its
    methods: GDPFed's query, IDP-FedAvg's adaptive one, PFA's and MS-PAFL's local one."""
    code = ("import sys\nfrom tff_idp import run\n"
            "rc = run.main(sys.argv[1:])\n"
            "print('tff imported:', 'tensorflow_federated' in sys.modules)\n"
            "sys.exit(rc)\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    for methods in ('["dp_fedavg", "idp_fedavg", "pfa"]', '["ms_pafl"]'):
        extra = (["--set", "local_epsilon=5.0", "--set", 'data_sampling="wr"']
                 if "ms_pafl" in methods else [])
        done = subprocess.run(
            [sys.executable, "-c", code, "--quiet", "--backend", "fast", "--set", "rounds=2",
             "--set", f"methods={methods}", *extra, "--output-dir", str(tmp_path / "out")],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "tff imported: False" in done.stdout, methods
