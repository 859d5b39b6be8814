"""CLI conventions a user relies on (issue 17, items 10-11): results named after the config
file, a run folder of another config never silently overwritten, ``--output-dir``, a
model that does not fit the data and bad bench flags refused in one line before any work,
help on every flag."""
import pytest

from tff_idp import bench, run, runtime

runtime.quiet_tf_logs()
import tensorflow  # noqa: E402,F401

SMALL = ["--set", "rounds=1", "--set", "num_clients=20", "--set", 'methods=["p_fedavg"]',
         "--quiet"]


def _one_line_error(capfd, needle):
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err
    return err[0]


def test_results_are_named_after_the_config_file_and_another_config_is_refused(
        tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    small = 'rounds = 1\nnum_clients = 20\nmethods = ["p_fedavg"]\n'
    (tmp_path / "mine.toml").write_text('local_lr = 0.1\n' + small)
    assert run.main(["mine.toml", "--output-dir", "out", "--quiet"]) == 0
    folder = tmp_path / "out" / "mine" / "p_fedavg-seed0"
    before = (folder / "summary.json").read_text()
    capfd.readouterr()
    (tmp_path / "mine.toml").write_text('local_lr = 0.2\n' + small)   # another config, same name
    assert run.main(["mine.toml", "--output-dir", "out", "--quiet"]) == 2
    _one_line_error(capfd, "name='mine': ")
    assert (folder / "summary.json").read_text() == before           # nothing written
    assert run.main(["mine.toml", "--output-dir", "out", "--force", "--quiet"]) == 0
    assert (folder / "summary.json").read_text() != before


def test_a_model_that_does_not_take_the_data_is_one_line(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    code = run.main(["--set", 'dataset="synthetic:cifar10"', "--set", 'model="digits_mlp"',
                     "--output-dir", "out"] + SMALL)
    assert code == 2
    _one_line_error(capfd, "model='digits_mlp': does not take synthetic:cifar10's inputs of "
                           "shape (32, 32, 3)")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flags,needle", [
    (["--model", "nope"], "--model='nope': choose from"),
    (["--clients", "0"], "--clients=0: must be >= 1"),
    (["--rounds", "0"], "--rounds=0: must be >= 1"),
    (["--model", "digits_mlp"], "--model='digits_mlp': the bench has inputs for image models"),
    (["--model", "char_lstm", "--chunk", "0"], "--chunk=0: must be >= 1"),
    (["--chunk", "4,x"], "--chunk='4,x': expected a number of clients, CLIENTSxLANES (8x2)"),
    (["--chunk", "8x2x2"], "--chunk='8x2x2': expected a number of clients"),
    (["--model", "char_lstm", "--chunk", "8x0"], "--chunk=8x0: must be >= 1"),
    (["--eval-examples", "0"], "--eval-examples=0: must be >= 1"),
    (["--unrolled-steps", "-1"], "--unrolled-steps=-1: must be >= 0"),
    (["--method", "fedsgd"], "--method='fedsgd': choose from"),
    (["--method", "dp_pfeddsu", "--head-epochs", "0"], "--head-epochs=0: must be >= 1"),
    (["--sequence-targets"], "--sequence-targets: needs --model char_lstm or char_lstm_torch, "
                             "not 'cnn2'"),
    # issue 61: a MemoryError traceback (111 PiB) before; refused by the estimate, never run
    (["--steps", "100000000", "--batch", "100000"], "--steps=100000000, --batch=100000:"),
])
def test_bad_bench_flags_are_one_line_exit_2(flags, needle, tmp_path, capfd):
    assert bench.main(flags + ["--out", str(tmp_path / "b.json")]) == 2
    _one_line_error(capfd, needle)
    assert not (tmp_path / "b.json").exists()


def test_bench_times_the_shakespeare_cells_task(tmp_path, capsys, monkeypatch):
    """The Shakespeare cells' task (a target at every position, PyTorch's initialisers) on
    the fast backend, the ceiling and evaluation, at tiny sizes."""
    import json
    import os
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "")      # restored to absent at the end
    monkeypatch.delenv("TF_NUM_INTRAOP_THREADS")
    out = tmp_path / "b.json"
    assert bench.main(["--model", "char_lstm_torch", "--sequence-targets", "--clients", "3",
                       "--steps", "1", "--only", "fast,fast_train,ceiling,eval",
                       "--eval-examples", "8", "--rounds", "1", "--warmup", "0",
                       "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["seconds_per_round"]) == {"ours_fast", "fast_train", "ceiling"}
    assert result["eval_seconds_per_1000"] > 0 and result["modes"]["ours_fast"] == "cohort"
    assert "TF_NUM_INTRAOP_THREADS" not in os.environ       # no lanes: TF's default
    # the timings say where they were measured: this machine's CPU, cores, threads, boot
    from tff_idp.engine.segments import cpu_model, usable_cores
    m = result["machine"]
    assert (m["cpu"], m["cores"], m["host_cores"], m["intra_op_threads"]) == (
        cpu_model(), usable_cores(), os.cpu_count(), "default")
    assert m["boot"] and m["host"]
    printed = capsys.readouterr().out
    assert "a target at every position" in printed
    assert (f"  on {cpu_model()}, {usable_cores()} cores, intra-op threads default, host "
            f"{m['host']} (boot {m['boot']})\n") in printed
    # several chunk sizes and lanes: the fast runner once at each, in one process, which
    # asks for one intra-op thread as `run` does for fast_lanes > 1; the ceiling is timed
    # at that setting and, in a process of its own, at TensorFlow's default, and the
    # ratios are to the faster of the two
    # (a CNN at batch 2: the chunks and lanes are the model's business alone, and the LSTM
    # took twice its time here)
    assert bench.main(["--model", "cnn2", "--clients", "3", "--steps", "1", "--batch", "2",
                       "--chunk", "2,3x2", "--only", "fast,ceiling", "--rounds", "1",
                       "--warmup", "0", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    sec = result["seconds_per_round"]
    assert set(sec) == {"ours_fast@2", "ours_fast@3x2", "ceiling", "ceiling_default_threads"}
    assert result["tf_num_intraop_threads"] == os.environ["TF_NUM_INTRAOP_THREADS"] == "1"
    assert result["machine"]["intra_op_threads"] == "1"
    best = min(sec["ceiling"], sec["ceiling_default_threads"])
    assert result["x_ceiling"]["ours_fast@2"] == pytest.approx(sec["ours_fast@2"] / best)
    printed = capsys.readouterr().out
    assert "one intra-op thread" in printed and "ceiling_default_threads" in printed


def test_lanes_off_a_gpu_ask_tensorflow_for_one_intra_op_thread(monkeypatch):
    """`fast_lanes` > 1 on the fast backend off a GPU sets TF_NUM_INTRAOP_THREADS=1 (each
    lane's operations on their own core); nothing else does, and a value the user set is
    kept."""
    import os
    import types
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "")      # restored to absent at the end
    monkeypatch.delenv("TF_NUM_INTRAOP_THREADS")

    def cfg(backend="fast", lanes=2, device="auto"):
        return types.SimpleNamespace(backend=backend, fast_lanes=lanes, device=device)
    for cfgs in ([cfg(lanes=1)], [cfg(device="gpu")], [cfg(backend="tff")], []):
        assert not runtime.one_thread_per_op_for_lanes(cfgs)
        assert "TF_NUM_INTRAOP_THREADS" not in os.environ
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "2")
    assert not runtime.one_thread_per_op_for_lanes([cfg()])
    assert os.environ["TF_NUM_INTRAOP_THREADS"] == "2"
    monkeypatch.delenv("TF_NUM_INTRAOP_THREADS")
    assert runtime.one_thread_per_op_for_lanes([cfg(lanes=1), cfg(device="cpu")])
    assert os.environ["TF_NUM_INTRAOP_THREADS"] == "1"


@pytest.mark.parametrize("module", ["tff_idp.report", "tff_idp.bench", "tff_idp.data",
                                    "tff_idp.run"])
def test_every_flag_has_help(module, capsys):
    import importlib
    main = importlib.import_module(module).main if module != "tff_idp.data" else \
        importlib.import_module("tff_idp.data.__main__").main
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    lines = text.splitlines()
    flags = [i for i, line in enumerate(lines) if line.strip().startswith("--")
             and not line.strip().startswith("--help")]
    for i in flags:        # a flag's help is on its line or the next, indented
        own = lines[i].strip().split("  ", 1)
        assert len(own) == 2 and own[1].strip() or lines[i + 1].startswith(" " * 10), lines[i]
    if module == "tff_idp.data":
        assert "fashion_mnist" in text and "cifar100" in text


def test_tools_do_not_print_tensorflows_start_up_lines(tmp_path):
    """Issue 17 item 13: no cuDNN/cuFFT/cuBLAS registration or oneDNN lines from the tools
    that import TensorFlow (run is covered by tests/test_run_cli.py). The report of a table
    with no complete run is refused in one line, exit 1, nothing written (issue 34)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    # a copy outside runs/ has no archive (harness.archive.archive_root): the repository's
    # archived smoke runs of this table would otherwise be copied and reported
    config = tmp_path / "table4.toml"
    config.write_text((root / "runs" / "dp_pfeddsu" / "table4.toml").read_text())
    done = subprocess.run([sys.executable, "-m", "tff_idp.report", str(config), "--scale", "smoke",
                           "--report-dir", str(tmp_path / "r"),
                           "--output-dir", str(tmp_path / "none")],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 1 and len(lines) == 1, done.stderr[-1000:]
    assert lines[0].startswith("error: no run of dp-pfeddsu-table4 at scale smoke is "
                               "complete under"), lines[0]
    assert "python -m tff_idp.run" in lines[0] and "--scale smoke" in lines[0]
    assert not (tmp_path / "r").exists()      # run's flag name (--report-dir) is accepted


def test_a_download_without_a_route_fails_in_one_line_within_30_seconds(tmp_path, capfd):
    """Issue 17 item 7: the data set's host is probed first (TFDS's own loop retried name
    resolution until killed and left a .tmp file)."""
    import time
    from tff_idp.data import __main__ as data_cli
    from tff_idp.data.network import HOSTS, unreachable
    if unreachable(HOSTS["cifar10"]) is None:
        pytest.skip("this machine reaches the download host: not the no-network case")
    t0 = time.perf_counter()
    assert data_cli.main(["build", "cifar10", "--root", str(tmp_path / "d")]) == 2
    assert time.perf_counter() - t0 < 30
    _one_line_error(capfd, "dataset='cifar10': cannot reach www.cs.toronto.edu")
    assert not any((tmp_path / "d").rglob("*.tmp*")) and not list((tmp_path / "d").rglob("*"))


def test_every_config_key_has_its_own_help_line():
    """Issue 34: `run --help` documents every key, each with its own text (keys documented
    together used to leave all but the first blank)."""
    from tff_idp.run import _key_help
    lines = _key_help().splitlines()[1:]
    docs = {}
    for line in lines:
        key, rest = line.split(None, 1)
        doc = rest.split(". ", 1)[1] if ". " in rest else ""
        assert len(doc) >= 10, line
        assert "``" not in doc, line          # no raw reStructuredText markup
        docs.setdefault(doc, []).append(key)
    assert not [keys for keys in docs.values() if len(keys) > 1]


def test_list_shows_every_config_method_and_data_set(capsys, monkeypatch):
    """Issue 34: `python -m tff_idp.run --list` names every config under runs/ with its
    title (a table with the labels --only and --axis take), every method with its line,
    and each data set with whether it is here."""
    from pathlib import Path
    from tff_idp.catalog import config_files
    from tff_idp.methods import METHODS
    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    assert run.main(["--list"]) == 0
    out = capsys.readouterr().out
    configs = config_files("runs")
    assert len(configs) > 30 and all(f"  {p}  [" in out for p in configs)
    assert "GDPFed Table II: test accuracy" in out
    # what chooses part of a table: its data sets (--only) and its axis labels (--axis)
    table1 = out.split("  runs/idp_fedavg/fmnist-table1.toml  [table]\n", 1)[1]
    table1 = table1.split("\n  runs/")[0]
    assert "      --only: FMNIST; --axis: 0-0-0 | 0-0-100 | 34-43-23 | 54-37-9 | 100-0-0" in \
        table1.splitlines()
    assert all(f"  {name} " in out and m.summary in out for name, m in METHODS.items())
    import re
    assert re.search(r"^  digits +here$", out, re.M)          # ships with scikit-learn
    assert re.search(r"^  svhn_cropped +(here|missing: )", out, re.M)


def test_list_starts_no_tensorflow(tmp_path):
    """`--list` reads the configs and looks for the data sets: no TensorFlow (TFDS, which
    imports it, is asked only where a data set's TFDS folder exists): 2.8 s against 11 s."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    code = ("import runpy, sys\n"
            "try:\n"
            "    runpy.run_module('tff_idp.run', run_name='__main__', alter_sys=True)\n"
            "finally:\n"
            "    print('tensorflow imported' if 'tensorflow' in sys.modules else "
            "'no tensorflow', file=sys.stderr)\n")
    # in a folder of its own: a TFDS copy prepared in this checkout's datasets/ is not looked at
    import os
    proc = subprocess.run([sys.executable, "-c", code, "--list"], cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(root)), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "svhn_cropped" in proc.stdout and "no tensorflow" in proc.stderr, proc.stderr[-500:]


def test_bench_out_under_a_file_is_refused_before_any_work(tmp_path, capfd):
    """Issue 61: --out under a file failed after 9 s of timing."""
    (tmp_path / "f").write_text("x")
    assert bench.main(["--out", str(tmp_path / "f" / "b.json")]) == 2
    _one_line_error(capfd, "is a file, not a folder")


def test_an_audit_that_cannot_fit_is_refused_before_its_folder(tmp_path, monkeypatch, capfd):
    """Issue 61: 100,000 canaries on ResNet-18 tried to allocate 130 GiB after creating the
    run's .partial folder; the canaries' signs alone are 140 GB. Refused by the estimate on a
    24 GB machine, nothing written."""
    from tff_idp.engine import memory
    monkeypatch.setattr(memory, "machine_memory_bytes", lambda: 24 * 2 ** 30)
    monkeypatch.chdir(tmp_path)
    code = run.main(["--set", 'dataset="synthetic:cifar10"', "--set", 'model="resnet18"',
                     "--set", "audit_canaries=100000",
                     "--backend", "fast", "--output-dir", "out"] + SMALL)
    assert code == 2
    _one_line_error(capfd, "audit_canaries=100000: the audit needs at least")
    assert not (tmp_path / "out").exists()


def test_the_canary_estimate_counts_signs_and_a_rounds_updates():
    from tff_idp.engine.memory import canary_bytes
    need = canary_bytes(20_000, 1_663_370, 0.035)
    assert need["signs"] == 20_000 * 207_922
    # 10,000 inserted at 3.5%: 350 expected, 461 at six standard deviations, 3 float32 copies
    assert need["round"] == pytest.approx(3 * 4 * 461.4 * 1_663_370, rel=1e-3)


def test_a_changed_single_run_goes_to_its_own_folder(tmp_path, monkeypatch, capfd):
    """Issue 62 item 2: `run --backend fast` then `run` then `run --set rounds=2` collided
    ("holds a p_fedavg run of another config"); each now has its own folder, as a table's
    changed runs do; keys that only place a run keep the name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.toml").write_text(
        'methods = ["p_fedavg"]\nrounds = 1\nnum_clients = 20\nbackend = "fast"\n'
        'output_dir = "out"\n')
    for extra in ([], ["--set", "rounds=2"], ["--set", "local_lr=0.05", "--set",
                                               "fast_chunk_size=4"], []):
        assert run.main(["tiny.toml", "--quiet"] + extra) == 0, capfd.readouterr().err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "tiny", "tiny+local_lr_0.05", "tiny+rounds_2"]
    assert run.main(["tiny.toml", "--quiet", "--set", 'name="mine"', "--set",
                     "rounds=2"]) == 0
    assert (tmp_path / "out" / "mine").is_dir()


def test_seeds_on_a_single_config_give_mean_and_std(tmp_path, monkeypatch, capsys):
    """Issue 62 item 3: comparing methods over seeds needed a home-made table; now
    `run CONFIG --seeds 0,1,2` runs each seed and adds the mean +- std over them (the sample
    std, as the tables') and a plot with a labelled band."""
    import csv
    import statistics
    monkeypatch.chdir(tmp_path)
    (tmp_path / "two.toml").write_text('methods = ["p_fedavg", "dp_fedavg"]\nrounds = 1\n'
                                       'num_clients = 20\nbackend = "fast"\n')
    assert run.main(["two.toml", "--quiet", "--seeds", "0,1,2"]) == 0
    out = tmp_path / "results" / "two"
    with open(out / "summary-seeds0-2.csv") as f:
        rows = {r["method"]: r for r in csv.DictReader(f)}
    accs = []
    for k in range(3):
        with open(out / f"summary-seed{k}.csv") as f:
            accs.append(float(next(r for r in csv.DictReader(f)
                                   if r["method"] == "dp_fedavg")["test_acc_%"]))
    assert float(rows["dp_fedavg"]["test_acc_% mean"]) == pytest.approx(
        statistics.mean(accs), abs=0.006)
    assert float(rows["dp_fedavg"]["std"]) == pytest.approx(statistics.stdev(accs), abs=0.006)
    assert (out / "convergence-seeds0-2.png").stat().st_size > 0
    assert "over seeds 0, 1, 2" in capsys.readouterr().out
    assert run.main(["two.toml", "--quiet", "--seeds", "0,x"]) == 2
