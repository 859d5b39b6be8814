"""Faults a user meets: broken results files are not trusted, a finished run is not redone
unless asked (issue 16, items 8 and 9)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tff_idp import config, experiment_config
from tff_idp.engine.experiment import prepare
from tff_idp.engine.finished_runs import complete_run
from tff_idp.engine.persist import train_to_folder

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    cfg = experiment_config.load(None, ['methods=["p_fedavg"]', "rounds=3", "num_clients=30"])
    folder = tmp_path_factory.mktemp("runs") / "p_fedavg-seed0"
    train_to_folder(prepare(cfg), "p_fedavg", folder, progress=False)
    return cfg, folder


def _copy(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True)
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def test_a_finished_run_is_complete(finished):
    cfg, folder = finished
    assert complete_run(folder, cfg, "p_fedavg").method == "p_fedavg"
    other = experiment_config.load(None, ['methods=["p_fedavg"]', "rounds=3", "num_clients=30", "seed=1"])
    assert complete_run(folder, other, "p_fedavg") is None          # another config's


@pytest.mark.parametrize("name,damage", [
    ("summary.json", lambda t: t[:len(t) // 2]),                      # truncated
    ("summary.json", lambda t: ""),                                   # empty
    ("config.json", lambda t: "[1, 2]"),                              # foreign
    ("metrics.csv", lambda t: "\n".join(t.splitlines()[:-1]) + "\n"),  # a round missing
    ("metrics.csv", lambda t: t[:len(t) - 40]),                       # cut mid-row
])
def test_a_broken_file_makes_the_run_incomplete(finished, tmp_path, name, damage):
    cfg, folder = finished
    copy = _copy(folder, tmp_path / "p_fedavg-seed0")
    (copy / name).write_text(damage((copy / name).read_text()))
    assert complete_run(copy, cfg, "p_fedavg") is None


def _run(args, cwd):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "tff_idp.run", "--quiet", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)


def test_a_rerun_skips_finished_methods_and_force_retrains(tmp_path):
    # the fast backend: skipping and --force are the run's business, not a backend's, and
    # the TFF backend's start-up took half this test's time
    args = ["--set", 'methods=["p_fedavg"]', "--set", "rounds=2", "--set", "num_clients=30",
            "--set", 'backend="fast"', "--set", 'output_dir="out"', "--set",
            'name="digits-default"']
    first = _run(args, tmp_path)
    assert first.returncode == 0, first.stderr
    metrics = tmp_path / "out" / "digits-default" / "p_fedavg-seed0" / "metrics.csv"
    stamp = metrics.stat().st_mtime_ns
    again = _run(args, tmp_path)
    assert again.returncode == 0 and "skipped (--force retrains)" in again.stderr
    assert metrics.stat().st_mtime_ns == stamp and "p_fedavg" in again.stdout
    forced = _run(args + ["--force"], tmp_path)
    assert forced.returncode == 0 and "skipped" not in forced.stderr
    assert metrics.stat().st_mtime_ns != stamp


@pytest.mark.parametrize("sig,status", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_stop_signal_finishes_the_round_writes_a_checkpoint_and_says_so(tmp_path, sig,
                                                                         status):
    """kill, Slurm's preemption (SIGTERM) and Ctrl-C (SIGINT): one line, exit 143 / 130, a
    checkpoint of the round reached (checkpoint_every = 0 writes none otherwise), no
    traceback; the same command resumes from it."""
    import json
    import signal
    import time

    import numpy as np
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "tff_idp.run", "--quiet", "--set", "rounds=400", "--set",
            'methods=["p_fedavg"]', "--set", "checkpoint_every=0", "--set",
            'output_dir="out"', "--set", 'name="digits-default"']
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    partial = tmp_path / "out" / "digits-default" / "p_fedavg-seed0.partial"
    deadline = time.time() + 120
    while not partial.exists() and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(3.0)                               # some rounds in
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == status, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "p_fedavg: stopped" in lines[0], lines
    assert "Traceback" not in err
    if "stopped before round 1 of 400" in lines[0]:      # a slow machine: still setting up
        return
    assert "resume from the checkpoint of round" in lines[0]
    with np.load(partial / "checkpoint.npz", allow_pickle=False) as z:
        done = json.loads(str(z["meta"]))["rounds_done"]
    assert 1 <= done < 400 and f"round {done} of 400" in lines[0]


def test_a_run_folder_lock_refuses_live_and_foreign_holders(tmp_path):
    from tff_idp.atomic import HOST, FolderLock, FolderLocked
    folder = tmp_path / "run"
    lock = tmp_path / "run.lock"
    with FolderLock(folder):
        assert lock.read_text().strip() == f"{HOST}:{os.getpid()}"
        with pytest.raises(FolderLocked, match=f"in use by process {os.getpid()} on {HOST}"):
            FolderLock(folder).__enter__()
    assert not lock.exists()
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock.write_text(f"{HOST}:{dead.pid}\n")           # its holder died on this host
    with FolderLock(folder):
        assert lock.read_text().strip().endswith(f":{os.getpid()}")
    lock.write_text("another_node:1\n")               # cannot be judged from here
    with pytest.raises(FolderLocked, match="on another_node"):
        FolderLock(folder).__enter__()


def test_the_data_store_leaves_another_hosts_partial_build_alone(tmp_path):
    from tff_idp.atomic import HOST, AtomicFolder
    theirs = tmp_path / "entry.partial-another_node-1"
    ours_dead = tmp_path / f"entry.partial-{HOST}-999999999"
    theirs.mkdir()
    ours_dead.mkdir()
    with AtomicFolder(tmp_path / "entry", shared=True) as tmp:
        (tmp / "x").write_text("1")
    assert theirs.exists() and not ours_dead.exists() and (tmp_path / "entry" / "x").exists()


def test_a_second_run_into_the_same_folder_refuses_in_one_line(tmp_path):
    import signal
    import time
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "tff_idp.run", "--quiet", "--set", "rounds=400", "--set",
            'methods=["p_fedavg"]', "--set", 'backend="fast"', "--set", 'output_dir="out"',
            "--set", 'name="digits-default"']
    first = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    lock = tmp_path / "out" / "digits-default" / "p_fedavg-seed0.lock"
    deadline = time.time() + 120
    while not lock.exists() and time.time() < deadline:
        time.sleep(0.1)
    second = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=300)
    assert first.poll() is None, "the first run must go on"
    first.send_signal(signal.SIGTERM)
    first.wait(timeout=120)
    lines = [line for line in second.stderr.splitlines() if line.strip()]
    assert second.returncode == 2 and len(lines) == 1, second.stderr
    assert f"in use by process {first.pid}" in lines[0]



# ---- issue 35, class 2: a table run stops when asked, and its workers die with it ----------

def _table_processes(marker: str):
    """PIDs of live processes whose command line names ``marker`` (Linux /proc)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmd and state != "Z":
            found.append(int(pid))
    return found


def _start_parallel_table(tmp_path):
    import time
    from tests.harness.conftest import tiny_table
    from tff_idp.harness.table import expand, load_table
    path = tiny_table(tmp_path, extra="").resolve()
    # rounds enough that no unit ends before the signal (a round of the fast backend here
    # takes milliseconds)
    path.write_text(path.read_text().replace("rounds = 3", "rounds = 4000\ncheckpoint_every = 0"))
    units = expand(load_table(str(path)), "paper")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "tff_idp.run", str(path), "--scale",
                             "paper", "--jobs", "2", "--quiet", "--no-report"], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    beats = [u.folder.with_name(u.folder.name + ".partial") / "heartbeat.json" for u in units]
    deadline = time.time() + 180
    while sum(b.exists() for b in beats) < 2 and time.time() < deadline:
        time.sleep(0.1)
    assert sum(b.exists() for b in beats) == 2, "two units should be training"
    return proc, units, str(path)


@pytest.mark.parametrize("sig,status", [("SIGTERM", 143)])   # SIGINT: the same handler
def test_a_parallel_table_stops_its_running_units_at_a_checkpoint_and_starts_no_other(
        tmp_path, sig, status):
    import signal
    import time
    proc, units, marker = _start_parallel_table(tmp_path)
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == status, err
    assert "Traceback" not in err
    last = [line for line in err.splitlines() if line.strip()][-1]
    assert last == (f"stopped ({sig}): 0 runs done, 2 stopped at a checkpoint, 6 not started; "
                    "run the same command to go on"), err
    partials = [u.folder.with_name(u.folder.name + ".partial") for u in units]
    started = [p for p in partials if p.exists()]
    assert len(started) == 2 and all((p / "checkpoint.npz").exists() for p in started)
    time.sleep(0.5)
    assert _table_processes(marker) == []


def test_the_workers_of_a_killed_table_run_die_with_it(tmp_path):
    import signal
    import time
    proc, _, marker = _start_parallel_table(tmp_path)
    workers = [p for p in _table_processes(marker) if p != proc.pid]
    assert len(workers) == 2
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    deadline = time.time() + 120
    while _table_processes(marker) and time.time() < deadline:
        time.sleep(0.2)
    assert _table_processes(marker) == []


@pytest.mark.parametrize("after", [0.4, 1.5, 2.5, 3.5])
def test_ctrl_c_at_any_moment_of_start_up_ends_in_one_line_and_130(tmp_path, after):
    """Start-up imports TensorFlow, loads the data and partitions it: a Ctrl-C anywhere in it
    (or in the first rounds) gives one line and exit 130, never a traceback. (Before the
    interpreter has run the entry point's first lines, about 0.1 s, Python's own handling
    applies; no timing a person can produce falls there.)"""
    import signal
    import time
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "tff_idp.run", "--quiet", "--set",
                             "rounds=400", "--set", 'methods=["p_fedavg"]', "--set",
                             'output_dir="out"',
                             "--set", 'name="digits-default"'], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 130 and len(lines) == 1, err
    assert "Traceback" not in err and "stopped" in lines[0]


# ---- issue 35, class 1: data that is wrong never trains --------------------------------------

def _made_fashion_mnist(tmp_path, monkeypatch, train_labels=None):
    """Small IDX files in Fashion-MNIST's format staged under tmp_path/root, with FILES
    pointing at their checksums (as a release with this content would)."""
    import gzip
    import hashlib

    import numpy as np
    from tff_idp.data import fashion_mnist
    rng = np.random.default_rng(0)
    arrays = {"train-images-idx3-ubyte.gz": rng.integers(0, 256, (40, 28, 28)),
              "train-labels-idx1-ubyte.gz": rng.integers(0, 10, 40) if train_labels is None
              else np.asarray(train_labels),
              "t10k-images-idx3-ubyte.gz": rng.integers(0, 256, (10, 28, 28)),
              "t10k-labels-idx1-ubyte.gz": rng.integers(0, 10, 10)}
    base = fashion_mnist.folder(tmp_path / "root")
    base.mkdir(parents=True)
    sums = {}
    for name, a in arrays.items():
        raw = bytes([0, 0, 8, a.ndim]) + np.asarray(a.shape, ">u4").tobytes() + \
            a.astype(np.uint8).tobytes()
        with gzip.open(base / name, "wb") as f:
            f.write(raw)
        sums[name] = hashlib.sha256(raw).hexdigest()
    monkeypatch.setattr(fashion_mnist, "FILES", sums)
    return base


def _rewrite_idx(path, array):
    import gzip

    import numpy as np
    with gzip.open(path, "wb") as f:
        f.write(bytes([0, 0, 8, array.ndim]) + np.asarray(array.shape, ">u4").tobytes() +
                array.astype(np.uint8).tobytes())


@pytest.mark.parametrize("damage", ["cut", "zeros"])
def test_a_damaged_fashion_mnist_file_is_refused_at_load_and_by_check(tmp_path, monkeypatch,
                                                                      damage):
    import numpy as np
    from tff_idp.data import fashion_mnist, sources
    from tff_idp.data.staging import Need, stage
    from tff_idp.data.types import DataInvalidError
    base = _made_fashion_mnist(tmp_path, monkeypatch)
    root, no_tfds = str(tmp_path / "root"), str(tmp_path / "no-tfds")
    assert len(sources.load("fashion_mnist", root=root, data_dir=no_tfds).y_train) == 40
    assert not (base / ".verified.json").exists()    # no mtime stamp: content every time
    labels = fashion_mnist.read_idx(base / "train-labels-idx1-ubyte.gz")
    _rewrite_idx(base / "train-labels-idx1-ubyte.gz",
                 labels[:39] if damage == "cut" else np.zeros_like(labels))
    with pytest.raises(DataInvalidError, match="train-labels-idx1-ubyte.gz.*sha256"):
        sources.load("fashion_mnist", root=root, data_dir=no_tfds)
    status = stage(Need("fashion_mnist", no_tfds, root), check_only=True)
    assert status.state == "missing" and status.detail.startswith("damaged:"), status


def test_labels_outside_the_classes_are_refused_before_training(tmp_path, monkeypatch):
    import numpy as np
    from tff_idp.data import sources
    from tff_idp.data.types import DataInvalidError
    _made_fashion_mnist(tmp_path, monkeypatch, train_labels=np.arange(40) % 13)
    with pytest.raises(DataInvalidError, match="train labels span 0..12, outside 0..9"):
        sources.load("fashion_mnist", root=str(tmp_path / "root"),
                     data_dir=str(tmp_path / "no-tfds"))


@pytest.mark.skipif(not (ROOT / "datasets" / "raw" / "fashion-mnist").is_dir(),
                    reason="real Fashion-MNIST not staged")
def test_a_cut_real_labels_file_stops_the_run_in_one_line_before_anything_is_written(
        tmp_path):
    from tff_idp.data import fashion_mnist
    base = fashion_mnist.folder(tmp_path / "ds")
    base.mkdir(parents=True)
    for name in fashion_mnist.FILES:
        (base / name).write_bytes((ROOT / "datasets" / "raw" / "fashion-mnist" / name)
                                  .read_bytes())
    labels = fashion_mnist.read_idx(base / "train-labels-idx1-ubyte.gz")
    _rewrite_idx(base / "train-labels-idx1-ubyte.gz", labels[:59000])
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "tff_idp.run", "--quiet", "--set",
                           'dataset="fashion_mnist"', "--set", 'model="cnn2"', "--set",
                           "rounds=1", "--set", f'data_root="{tmp_path / "ds"}"', "--set",
                           f'data_dir="{tmp_path / "no-tfds"}"', "--set", 'output_dir="out"',
                           "--set", 'name="digits-default"'],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "train-labels-idx1-ubyte.gz" in lines[0] and "sha256" in lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage", "offsets", "ids"])
def test_a_bad_data_cache_entry_is_set_aside_in_one_line_and_rebuilt(tmp_path, capsys,
                                                                     damage):
    import numpy as np
    from tff_idp.engine.experiment import prepare
    cfg = experiment_config.load(None, ['methods=["p_fedavg"]', "num_clients=30",
                             f'data_root="{tmp_path / "ds"}"'])
    first = prepare(cfg).client_indices
    [entry] = [p.parent for p in (tmp_path / "ds" / "built").rglob("arrays.npz")]
    npz = entry / "arrays.npz"
    if damage == "truncated":
        npz.write_bytes(npz.read_bytes()[:100])
    elif damage == "empty":
        npz.write_bytes(b"")
    elif damage == "garbage":
        npz.write_bytes(os.urandom(4000))
    else:
        with np.load(npz) as z:
            arrays = {k: z[k] for k in z.files}
        if damage == "offsets":
            arrays["offsets"][-1] += 7
        else:
            arrays["flat"][3] = 10 ** 6
        np.savez(npz, **arrays)
    capsys.readouterr()
    again = prepare(cfg).client_indices
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith(f"data cache {entry}") and "set aside" in err[0]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert (entry / "arrays.npz").exists() and entry.with_name(entry.name + ".bad").is_dir()


# ---- issue 35, class 4: full disks, odd paths --------------------------------------------

@pytest.fixture
def small_fs(tmp_path):
    """A 16 KB file system (tmpfs; needs the right to mount, as root has here)."""
    where = tmp_path / "fs"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip()})")
    yield where
    subprocess.run(["umount", str(where)], capture_output=True)


@pytest.mark.parametrize("fill", [True])      # 0 bytes free: the lock itself cannot be written
def test_a_full_disk_ends_in_one_line_and_leaves_no_lock_and_nothing_complete(small_fs,
                                                                              tmp_path, fill):
    if fill:                                        # 0 bytes free
        fd = os.open(small_fs / "filler", os.O_CREAT | os.O_WRONLY)
        try:
            while True:
                os.write(fd, b"x" * 512)
        except OSError:
            pass
        finally:
            os.close(fd)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    for _ in range(2):                              # the rerun is not blocked by a lock
        done = subprocess.run([sys.executable, "-m", "tff_idp.run", "--quiet", "--set",
                               "rounds=3", "--set", 'methods=["p_fedavg"]', "--set",
                               f'output_dir="{small_fs / "out"}"',
                               "--set", 'name="digits-default"'], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 1 and len(lines) == 1, done.stderr
        assert lines[0].startswith("error: no space left on device writing") and \
            "KB free" in lines[0]
    assert not list(small_fs.rglob("*.lock"))
    assert not (small_fs / "out" / "digits-default" / "p_fedavg-seed0").exists()


def test_an_empty_lock_file_is_stale_once_old_and_says_so(tmp_path, capsys):
    import time
    from tff_idp.atomic import STALE_EMPTY_LOCK_SECONDS, FolderLock, FolderLocked
    folder = tmp_path / "run"
    lock = tmp_path / "run.lock"
    lock.write_text("")
    with pytest.raises(FolderLocked):               # just made: its writer may be writing
        FolderLock(folder).__enter__()
    old = time.time() - 2 * STALE_EMPTY_LOCK_SECONDS
    os.utime(lock, (old, old))
    capsys.readouterr()
    with FolderLock(folder):
        assert lock.read_text().strip().endswith(f":{os.getpid()}")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "names no process" in err[0] and "taken over" in err[0]


# ---- issue 35, class 5: reports that cannot print impossible values -------------------------

@pytest.fixture(scope="module")
def reported_table(tmp_path_factory):
    """A two-run table (P-FedAvg at two clip scales, 3 rounds), trained once."""
    from tests.harness.conftest import tiny_table
    from tff_idp.harness.runner import run_table
    from tff_idp.harness.table import load_table
    where = tmp_path_factory.mktemp("reported")
    spec = load_table(str(tiny_table(where, methods='["p_fedavg"]', seeds=1)))
    assert run_table(spec, "paper", progress=False) == 0
    return spec


TAMPER = [
    ("summary.json", "final_test_accuracy", "abc", "could not convert string to float"),
    ("summary.json", "final_test_accuracy", -3.0, "not a fraction in [0, 1]"),
    ("summary.json", "final_test_accuracy", "nan", "not a fraction in [0, 1]"),
    ("summary.json", "final_test_accuracy", "inf", "not a fraction in [0, 1]"),
    ("summary.json", "seconds_total", None, "no seconds_total"),
    ("summary.json", "privacy", [1, 2], "privacy is not an object"),
    ("metrics.csv", "test_accuracy", "abc", "could not convert string to float"),
]


@pytest.mark.parametrize("name,key,value,why", TAMPER)
def test_a_tampered_run_is_listed_as_unreadable_and_the_rest_is_reported(
        reported_table, tmp_path, name, key, value, why):
    import csv
    import json
    import shutil

    from tff_idp.harness.table import expand
    from tff_idp.report import write_report
    units = expand(reported_table, "paper")
    backup = tmp_path / "backup"
    shutil.copytree(units[0].folder, backup)
    try:
        path = units[0].folder / name
        if name == "summary.json":
            s = json.loads(path.read_text())
            if value is None:
                del s[key]
            else:
                s[key] = value
            path.write_text(json.dumps(s))
        else:
            rows = list(csv.DictReader(open(path)))
            rows[1][key] = value
            with open(path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)
        # the digests made again: the values themselves are checked, not only the bytes
        # (a changed byte alone: tests/faults/test_stored_file_matrix.py)
        from tff_idp.results.manifest import MANIFEST, write_manifest
        write_manifest(units[0].folder, [p.name for p in units[0].folder.iterdir()
                                         if p.name != MANIFEST])
        report = write_report(reported_table, "paper", tmp_path / "report").read_text()
    finally:
        shutil.rmtree(units[0].folder)
        shutil.copytree(backup, units[0].folder)
    assert f"unreadable: {path}: " in report and why in report, report
    assert "1 of 2 runs complete" in report
    table = [line for line in report.split("## ")[0].splitlines() if line.startswith("|")]
    assert table and not any(bad in line.lower() for line in table
                             for bad in ("-300.00", "nan", "inf"))
    table = "\n".join(table)
    good = json.loads((units[1].folder / "summary.json").read_text())
    assert f"{100 * good['final_test_accuracy']:.2f}" in table


def test_a_table_unit_folder_that_is_a_file_is_refused_before_any_run(tmp_path, capsys):
    from tests.harness.conftest import tiny_table
    from tff_idp import run
    path = tiny_table(tmp_path, methods='["p_fedavg"]', seeds=1)
    cell = tmp_path / "results" / "tiny" / "smoke" / "digits" / "1x"
    cell.mkdir(parents=True)
    (cell / "p_fedavg-seed0").write_text("")
    assert run.main([str(path), "--scale", "smoke", "--quiet"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == [f"error: output_dir='{tmp_path / 'results' / 'tiny' / 'smoke'}': "
                   f"{cell / 'p_fedavg-seed0'} is a file, not a folder"]
    assert not (cell.parent / "2x").exists()


def test_a_long_round_stops_at_the_next_chunk_and_resumes_to_the_same_metrics(tmp_path,
                                                                              monkeypatch,
                                                                              capsys):
    """Issue 35, class 3: a stop request reaches a round between two chunks of clients; the
    round is dropped, the run stops at the checkpoint of the round before, and resuming
    redoes that round exactly (the metrics equal an uninterrupted run's). The request is
    made, deterministically, at the first chunk boundary after round 1's heartbeat (the
    backend's ``stop_requested`` monkeypatched; a real SIGTERM's way to the flag is tested by
    the signal tests above), so the test never depends on when a signal lands."""
    import csv
    import json
    import signal

    import numpy as np
    from tff_idp import run
    from tff_idp.engine import backends
    from tff_idp.runtime import StopRequests
    args = ["--quiet", "--set", 'methods=["p_fedavg"]', "--set", 'backend="fast"', "--set",
            "expected_rate=1.0", "--set", "fast_chunk_size=2", "--set", "local_steps=2",
            "--set", "rounds=3", "--set", "checkpoint_every=0", "--set",
            'name="digits-default"']
    monkeypatch.chdir(tmp_path)
    assert run.main(args + ["--set", 'output_dir="ref"']) == 0
    partial = tmp_path / "out" / "digits-default" / "p_fedavg-seed0.partial"
    asked = []

    def stop_in_round_two():
        if (partial / "heartbeat.json").exists():       # round 1 is done
            StopRequests._active.signum = signal.SIGTERM
            asked.append(True)
            return True
        return False
    monkeypatch.setattr(backends, "stop_requested", stop_in_round_two)
    capsys.readouterr()
    try:
        code = run.main(args + ["--set", 'output_dir="out"'])
    except SystemExit as e:
        code = e.code
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert asked and code == 143 and len(lines) == 1, lines
    assert lines[0].startswith("p_fedavg: stopped during round 2 of 3"), lines
    with np.load(partial / "checkpoint.npz", allow_pickle=False) as z:
        assert json.loads(str(z["meta"]))["rounds_done"] == 1
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    assert run.main(args + ["--set", 'output_dir="out"']) == 0

    def accuracies(root):
        with open(tmp_path / root / "digits-default" / "p_fedavg-seed0" / "metrics.csv") as f:
            return [r["test_accuracy"] for r in csv.DictReader(f)]
    assert accuracies("out") == accuracies("ref")
