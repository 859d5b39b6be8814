"""The generated fault matrix, stored files (issue 76): every file a run stores and reads
back (a finished run folder's files, a stopped run's checkpoint, rows and lock, the data
store's cached partition) times every damage: missing, empty, truncated, one byte flipped
(modification time kept), a NaN where a number was, a FIFO, /dev/zero, a folder, a link to
a copy outside the tree, a 200 MB line. The contract: a damaged file is set aside (or
ignored) and its content recomputed, giving exactly the undamaged run's numbers, or it is
refused in one line; never a hang (each case runs under a 120 s alarm), a traceback or a
silently wrong number; nothing outside the tree is written.

A finished run's files are read by the three readers (``engine.finished_runs.complete_run``:
None makes ``run`` train it again, shown end to end once; ``report``'s and the API's
``read_run``: one line); a stopped run's files by resuming it (``run``, in-process); the
cached partition by loading it again (``engine.experiment.pending_partition``)."""
import os
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest

from tff_idp import api, config, experiment_config, run
from tff_idp.engine import loop
from tff_idp.engine.finished_runs import complete_run
from tff_idp.report.runs import UnreadableRun, read_run as report_read_run

pytestmark = pytest.mark.slow

DAMAGES = ["missing", "empty", "truncated", "flipped byte", "nan", "fifo", "dev zero",
           "folder", "link out of the tree", "200 MB line"]
FINISHED = ["config.json", "metrics.csv", "summary.json", "ledger.csv", "server.csv",
            "observers.json", "files.sha256"]
STOPPED = ["checkpoint.npz", "checkpoint-rows.jsonl", "lock"]
CACHED = ["arrays.npz", "meta.json"]
CONFIG = """methods = ["p_fedavg"]
backend = "fast"
model = "logistic"
rounds = 4
checkpoint_every = 2
num_clients = 60
expected_rate = 0.2
"""


class Hang(Exception):
    pass


@pytest.fixture(autouse=True)
def _alarm():
    """A case that blocks (a FIFO read, /dev/zero) fails after 120 s instead of holding the
    suite."""
    def ring(*_):
        raise Hang("a stored-file case blocked for 120 s")
    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(120)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def damage(path: Path, kind: str, outside: Path) -> None:
    """Applies ``kind`` to ``path`` (a file), keeping its modification time where the file
    stays."""
    st = path.stat()
    data = path.read_bytes()
    if kind == "missing":
        path.unlink()
        return
    if kind in ("fifo", "dev zero", "folder", "link out of the tree"):
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "dev zero":
            path.symlink_to("/dev/zero")
        elif kind == "folder":
            path.mkdir()
        else:
            outside.mkdir(exist_ok=True)
            copy = outside / path.name
            copy.write_bytes(data)
            path.symlink_to(copy)
        return
    if kind == "empty":
        data = b""
    elif kind == "truncated":
        data = data[:len(data) // 2]
    elif kind == "flipped byte":
        i = len(data) // 2
        data = data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:]
    elif kind == "nan":                   # a number in the file (its last digit run) as nan
        text = data.decode("latin-1")
        j = max(text.rfind(d) for d in "0123456789")
        i = j
        while i > 0 and (text[i - 1].isdigit() or text[i - 1] == "."):
            i -= 1
        data = (text[:i] + "nan" + text[j + 1:]).encode("latin-1")
    path.write_bytes(data)
    if kind == "200 MB line":             # sparse: 200 MB of NUL bytes without a newline
        os.truncate(path, len(data) + 200 * 2 ** 20)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _metrics(folder: Path):
    """The run's numbers, per round (metrics.csv without its timing columns)."""
    import csv
    with open(folder / "metrics.csv") as f:
        return [{k: v for k, v in r.items() if "seconds" not in k} for r in csv.DictReader(f)]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A finished run, a run stopped at round 2 of 4 (SIGTERM: checkpoint, rows, lock
    released) with its data store, and the finished run's metrics."""
    root = tmp_path_factory.mktemp("pristine")
    (root / "c.toml").write_text(CONFIG)
    args = [str(root / "c.toml"), "--quiet", "--set", f'data_root="{root / "data"}"']
    assert run.main(args + ["--output-dir", str(root / "done")]) == 0
    real = loop.round_step

    def stop_after_round_2(ctx, state, rnd):
        row = real(ctx, state, rnd)
        if rnd == 1:
            ctx.stop.signum = signal.SIGTERM
        return row

    loop.round_step = stop_after_round_2
    try:
        with pytest.raises(SystemExit) as stopped:
            run.main(args + ["--output-dir", str(root / "stopped")])
        assert stopped.value.code == 143
    finally:
        loop.round_step = real
    done = root / "done" / "c" / "p_fedavg-seed0"
    partial = root / "stopped" / "c" / "p_fedavg-seed0.partial"
    assert (partial / "checkpoint.npz").is_file() and (done / "files.sha256").is_file()
    from tff_idp.atomic import HOST              # the lock a kill -9 leaves: a dead pid
    (partial.parent / "p_fedavg-seed0.lock").write_text(f"{HOST}:4194304\n")
    return root, done, partial, _metrics(done)


def _copy(pristine, tmp_path):
    root = pristine[0]
    for name in ("c.toml", "done", "stopped", "data"):
        src = root / name
        (shutil.copytree(src, tmp_path / name, symlinks=True) if src.is_dir()
         else shutil.copy(src, tmp_path / name))
    return tmp_path


def _one_line(text: str):
    assert "\n" not in text.strip() and len(text) <= 600, text


@pytest.mark.parametrize("kind", DAMAGES)
@pytest.mark.parametrize("name", FINISHED)
def test_a_finished_runs_file(pristine, tmp_path, name, kind):
    """Every reader refuses the folder (complete_run None: `run` trains it again), in one
    line; none returns a number from it."""
    base = _copy(pristine, tmp_path)
    folder = base / "done" / "c" / "p_fedavg-seed0"
    damage(folder / name, kind, tmp_path / "outside")
    cfg = experiment_config.load(str(base / "c.toml"), [f'data_root="{base / "data"}"'])
    assert complete_run(folder, cfg, "p_fedavg") is None, (name, kind)
    with pytest.raises(ValueError) as e:
        api.read_run(folder)
    _one_line(str(e.value))
    with pytest.raises(UnreadableRun) as e:
        report_read_run(folder)
    _one_line(str(e.value))
    if (tmp_path / "outside").exists():   # nothing written through the link
        assert (tmp_path / "outside" / name).read_bytes() == (
            pristine[1] / name).read_bytes()


def test_a_damaged_finished_run_is_trained_again_to_the_same_numbers(pristine, tmp_path,
                                                                     capfd):
    base = _copy(pristine, tmp_path)
    folder = base / "done" / "c" / "p_fedavg-seed0"
    damage(folder / "metrics.csv", "flipped byte", tmp_path / "outside")
    status = run.main([str(base / "c.toml"), "--quiet", "--set",
                       f'data_root="{base / "data"}"', "--output-dir", str(base / "done")])
    assert status == 0 and "Traceback" not in capfd.readouterr().err
    assert _metrics(folder) == pristine[3]


@pytest.mark.parametrize("kind", DAMAGES)
@pytest.mark.parametrize("name", STOPPED)
def test_a_stopped_runs_file(pristine, tmp_path, capfd, name, kind):
    """Resuming: the run ends with the uninterrupted run's numbers (the damaged file set
    aside, the run restarted where it must), or refuses in one line."""
    base = _copy(pristine, tmp_path)
    partial = base / "stopped" / "c" / "p_fedavg-seed0.partial"
    target = partial.parent / "p_fedavg-seed0.lock" if name == "lock" else partial / name
    damage(target, kind, tmp_path / "outside")
    status = run.main([str(base / "c.toml"), "--quiet", "--set",
                       f'data_root="{base / "data"}"', "--output-dir", str(base / "stopped")])
    err = capfd.readouterr().err
    assert "Traceback" not in err, err
    if status == 0:
        assert _metrics(partial.parent / "p_fedavg-seed0") == pristine[3], (name, kind)
    else:
        lines = [l for l in err.splitlines() if l.strip()]
        assert status in (1, 2) and len(lines) == 1, (status, lines)
    if (tmp_path / "outside").exists():
        assert (tmp_path / "outside" / target.name).read_bytes() == (
            pristine[2] / name if name != "lock" else
            pristine[2].parent / "p_fedavg-seed0.lock").read_bytes()


@pytest.mark.parametrize("kind", DAMAGES)
@pytest.mark.parametrize("name", CACHED)
def test_the_cached_partition(pristine, tmp_path, name, kind):
    """Loading the partition again gives the undamaged clients (the entry set aside and
    rebuilt) or one line; the rebuilt entry is stored."""
    from tff_idp.data import load
    from tff_idp.engine.experiment import pending_partition
    base = _copy(pristine, tmp_path)
    cfg = experiment_config.load(str(base / "c.toml"), [f'data_root="{base / "data"}"'])
    data = load(cfg.dataset, cfg.seed, cfg.data_dir, cfg.allow_download, cfg.data_root)
    clean, _ = pending_partition(cfg, data)
    entry = next((base / "data" / "built" / "digits").iterdir())
    damage(entry / name, kind, tmp_path / "outside")
    try:
        ids, save = pending_partition(cfg, data)
    except config.ConfigError as e:
        _one_line(str(e))
        return
    assert len(ids) == len(clean) and all(np.array_equal(a, b) for a, b in zip(ids, clean))
    if save is not None:
        save()
        again, _ = pending_partition(cfg, data)
        assert all(np.array_equal(a, b) for a, b in zip(again, clean))
