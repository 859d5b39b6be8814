"""Files, locks and stops (issue 61, classes 3 and 6): figures written atomically; a lock
whose pid now names another process (reused after a reboot) is taken over, a folder in the
lock's place is one line; a results folder made read-only or removed mid-run is one line; a
report never blocks on a FIFO in a run file's place; a stop during a start-up step or a
report ends the process at once; --replot refuses a curves.csv cut mid-row or holding
accuracies that are not percentages."""
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tff_idp import report, run
from tff_idp.atomic import HOST, FolderLock, FolderLocked, atomic_savefig

from .harness.conftest import tiny_table

SMALL = ["--quiet", "--set", "rounds=2", "--set", "num_clients=20", "--set",
         'methods=["p_fedavg"]']


def _one_line(capfd, needle):
    # TensorFlow's C++ logs at its first import in this process are not ours
    err = [l for l in capfd.readouterr().err.splitlines() if l.strip() and not any(
        tf in l for tf in ("tensorflow/", "TF-TRT", "oneDNN", "cuda"))]
    assert len(err) == 1 and needle in err[0], err
    return err[0]


def test_a_figure_is_written_atomically(tmp_path, monkeypatch):
    """A kill mid-write left a 0-byte PNG in 3 of 3 tries; now the previous figure stays."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure()
    path = atomic_savefig(fig, tmp_path / "c.png")
    before = path.read_bytes()

    def killed(self, fname, **kw):              # the write dies half-way
        Path(fname).write_bytes(b"\x89PNG half")
        raise KeyboardInterrupt
    monkeypatch.setattr(type(fig), "savefig", killed)
    with pytest.raises(KeyboardInterrupt):
        atomic_savefig(fig, path)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["c.png"]
    plt.close(fig)


def test_a_killed_writers_temporary_figure_is_removed_by_the_next_write(tmp_path):
    """Issue 76: a report killed mid-write (SIGKILL: no finally) left convergence.tmp-<pid>.png
    beside the figure, and later reports never removed it; a live writer's is kept."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    dead = tmp_path / "c.tmp-4194304.png"          # beyond pid_max: no such process
    dead.write_bytes(b"\x89PNG half")
    live = tmp_path / f"c.tmp-{os.getppid()}.png"
    live.write_bytes(b"\x89PNG being written")
    other = tmp_path / "d.tmp-4194304.png"         # another figure's: not this one's to clean
    other.write_bytes(b"x")
    fig = plt.figure()
    atomic_savefig(fig, tmp_path / "c.png")
    plt.close(fig)
    assert not dead.exists() and live.exists() and other.exists()


def test_a_lock_whose_pid_was_reused_is_taken_over(tmp_path):
    """The pid in the lock is alive but started after the lock was written (after a reboot,
    or a pid reused): not its writer, so the lock is stale."""
    folder, lock = tmp_path / "run", tmp_path / "run.lock"
    later = subprocess.Popen(["sleep", "30"])
    try:
        lock.write_text(f"{HOST}:{later.pid}\n")
        old = time.time() - 3600
        os.utime(lock, (old, old))                  # written an hour before it started
        with FolderLock(folder):
            assert lock.read_text().strip() == f"{HOST}:{os.getpid()}"
        lock.write_text(f"{HOST}:{later.pid}\n")    # written after it started: its own
        with pytest.raises(FolderLocked, match=f"in use by process {later.pid}"):
            FolderLock(folder).__enter__()
    finally:
        later.kill()
        later.wait()


def test_a_folder_in_place_of_the_lock_is_one_line(tmp_path):
    (tmp_path / "run.lock").mkdir()
    with pytest.raises(FolderLocked, match="a folder stands where the lock file goes"):
        FolderLock(tmp_path / "run").__enter__()


def test_a_read_only_run_folder_is_refused_before_any_work(tmp_path, monkeypatch, capfd):
    """As root, permissions do not bind; the check is os.access, so it is what is tested."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "out" / "ro" / "p_fedavg-seed0"
    folder.mkdir(parents=True)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p).resolve() == folder
                        else real(p, mode))
    assert run.main(SMALL + ["--set", 'name="ro"', "--output-dir", "out"]) == 2
    _one_line(capfd, "p_fedavg-seed0 is not writable")


def test_an_output_folder_removed_mid_run_is_one_line(tmp_path, monkeypatch, capfd):
    import shutil

    from tff_idp.engine import persist
    monkeypatch.chdir(tmp_path)
    real = persist.write_csv

    def removed(path, rows):                    # someone deletes the results mid-run
        shutil.rmtree(tmp_path / "out")
        real(path, rows)
    monkeypatch.setattr(persist, "write_csv", removed)
    assert run.main(SMALL + ["--output-dir", "out"]) == 1
    _one_line(capfd, "the run's results could not be written")


def _finished_table(tmp_path):
    path = tiny_table(tmp_path, methods='["p_fedavg"]', seeds=1)
    assert run.main([str(path), "--scale", "smoke", "--no-report", "--quiet"]) == 0
    return path


def _sigterm_after(seconds):
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    return timer


def test_a_report_never_blocks_on_a_fifo_in_a_run_file(tmp_path, capfd):
    path = _finished_table(tmp_path)
    metrics = next((tmp_path / "results").rglob("metrics.csv"))
    metrics.unlink()
    os.mkfifo(metrics)
    capfd.readouterr()
    timer = _sigterm_after(30)                  # a hang ends as 143, which fails the test
    try:
        status = report.main([str(path), "--scale", "smoke"])
    finally:
        timer.cancel()
    assert status in (0, 1)


@pytest.mark.parametrize("entry", ["run", "report"])
def test_a_stop_during_a_long_start_up_step_ends_at_once(tmp_path, monkeypatch, capfd, entry):
    """A start-up step (expanding a huge table, reading run folders) used to record a
    SIGTERM and go on for minutes; now the stop ends it within a second."""
    from tff_idp.harness import table as table_mod
    path = _finished_table(tmp_path) if entry == "report" else tiny_table(tmp_path)
    real = table_mod.expand

    def slow(*a, **k):                          # a step that would take a minute
        time.sleep(60)
        return real(*a, **k)
    monkeypatch.setattr(table_mod, "expand", slow)
    from tff_idp.report import cli as report_cli
    monkeypatch.setattr(run if entry == "run" else report_cli, "expand", slow, raising=False)
    capfd.readouterr()
    timer = _sigterm_after(0.5)
    start = time.perf_counter()
    try:
        main = run.main if entry == "run" else report.main
        status = main([str(path), "--scale", "smoke"])
    finally:
        timer.cancel()
    assert status == 143 and time.perf_counter() - start < 10
    _one_line(capfd, "stopped")


def test_a_stop_is_not_lost_in_a_garbage_collector_callback():
    """A stop raised while a collector callback runs (jax registers one) is printed as
    "Exception ignored" and lost: the fresh-clone suite's Ctrl-C at 2.5 s printed a traceback
    of jax's _xla_gc_callback. The collector is paused in immediate blocks, so the stop lands
    in the block's own code and ends it. Here most of the block's time is spent in a slow
    callback: without the pause the stop is lost and the block runs to its end."""
    import gc
    from tff_idp.runtime import StopRequests, StoppedInStartUp

    def slow_callback(phase, info):
        time.sleep(0.002)
    gc.callbacks.append(slow_callback)
    ended = []
    try:
        with StopRequests() as stop:
            timer = _sigterm_after(0.3)
            start = time.perf_counter()
            with pytest.raises(StoppedInStartUp):
                with stop.immediately():
                    assert not gc.isenabled()
                    with stop.immediately():            # nested: still paused, then kept
                        pass
                    assert not gc.isenabled()
                    while time.perf_counter() - start < 5:
                        cycle = [[] for _ in range(50)]  # cyclic garbage: collections
                        cycle.append(cycle)
                    ended.append(True)
            timer.cancel()
    finally:
        gc.callbacks.remove(slow_callback)
    assert not ended and time.perf_counter() - start < 2 and gc.isenabled()


def test_a_stop_during_an_import_waits_for_it_then_ends_the_block(tmp_path, monkeypatch):
    """A stop raised inside an import is the importer's to handle: ml_dtypes' C module init
    printed it as a traceback (CI, stop 83: ``slurm submit`` stopped 1 s in), a package's
    ``except Exception`` swallows it and the block goes on. Here a package catches what its
    slow import raises: the stop must wait for the import, then end the block at once, and
    give SIGALRM back as it found it."""
    from tff_idp.runtime import StopRequests, StoppedInStartUp
    (tmp_path / "slow_part_of_a_package.py").write_text("import time\ntime.sleep(1.0)\n")
    (tmp_path / "package_that_catches.py").write_text(
        "CAUGHT = []\ntry:\n    import slow_part_of_a_package\n"
        "except Exception as error:\n    CAUGHT.append(error)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("slow_part_of_a_package", "package_that_catches"):
        monkeypatch.delitem(__import__("sys").modules, name, raising=False)
    alarm = signal.getsignal(signal.SIGALRM)
    went_on = []
    with StopRequests() as stop:
        timer = _sigterm_after(0.3)
        start = time.perf_counter()
        with pytest.raises(StoppedInStartUp):
            with stop.immediately():
                import package_that_catches
                imported = time.perf_counter() - start
                time.sleep(5)
                went_on.append(True)
        timer.cancel()
    assert package_that_catches.CAUGHT == [] and imported >= 0.9
    assert not went_on and time.perf_counter() - start < imported + 1
    assert signal.getsignal(signal.SIGALRM) is alarm
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.parametrize("edit,needle", [
    (lambda t: t[:t.rindex(",", 0, len(t) - 5)], "cut short"),
    (lambda t: t.replace(",test_accuracy,", ",test_accuracy,extra,", 1), "extra fields"),
    (lambda t: _first_accuracy(t, "nan"), "'nan' is not a percentage"),
    (lambda t: _first_accuracy(t, "1e309"), "'1e309' is not a percentage"),
    (lambda t: _first_accuracy(t, "-3"), "'-3' is not a percentage"),
    (lambda t: _first_accuracy(t, "101"), "'101' is not a percentage"),
])
def test_replot_refuses_a_damaged_curves_file(tmp_path, capfd, edit, needle):
    path = _finished_table(tmp_path)
    assert report.main([str(path), "--scale", "smoke"]) == 0
    curves = next((tmp_path / "results").rglob("curves.csv"))
    curves.write_text(edit(curves.read_text()))
    capfd.readouterr()
    assert report.main([str(path), "--scale", "smoke", "--replot"]) == 2
    _one_line(capfd, needle)


def _first_accuracy(text, value):
    lines = text.splitlines()
    head = lines[0].split(",")
    col = head.index("accuracy")
    for i, line in enumerate(lines[1:], 1):
        cells = line.split(",")
        if cells[col]:
            cells[col] = value
            lines[i] = ",".join(cells)
            break
    return "\n".join(lines) + "\n"


def test_a_file_size_limit_ends_the_run_in_one_line_with_nothing_complete(tmp_path):
    """Issue 76: under ``ulimit -f`` the run's first large write raised an OSError (EFBIG)
    traceback. Now one line naming the limit, exit 1, no lock left, nothing complete."""
    import resource
    import sys
    root = Path(__file__).resolve().parents[1]
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))
    proc = subprocess.run(
        [sys.executable, "-m", "tff_idp.run", "--backend", "fast", "--set", "rounds=2",
         "--set", 'methods=["dp_fedavg"]', "--set", 'output_dir="res"'],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, preexec_fn=limit,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(root)))
    errors = [l for l in proc.stderr.replace("\r", "\n").splitlines()
              if l.startswith(("error", "Traceback"))]
    assert proc.returncode == 1 and len(errors) == 1, proc.stderr[-2000:]
    assert errors[0].startswith("error: file too large (a file-size limit")
    runs = list((tmp_path / "res").glob("*/*"))
    assert runs and all(p.name.endswith(".partial") for p in runs if p.is_dir())
    assert not list((tmp_path / "res").rglob("*.lock"))


@pytest.mark.parametrize("where", [".partial", "finished"])
def test_a_link_in_a_run_folders_place_is_never_written_through(tmp_path, capfd, where):
    """Issue 76: a ``.partial`` run folder that was a link to an outside folder got the run's
    files written there and the finished run became that link; --force on a linked run
    folder was a traceback. Now the link (only the link) is removed and the run writes a
    folder of its own; what the link led to is untouched."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    folder = tmp_path / "res" / "digits-default+rounds_1_backend_fast" / "dp_fedavg-seed0"
    folder.parent.mkdir(parents=True)
    link = folder.with_name(folder.name + ".partial") if where == ".partial" else folder
    link.symlink_to(outside, target_is_directory=True)
    status = run.main(["--backend", "fast", "--set", "rounds=1", "--set",
                       'methods=["dp_fedavg"]', "--set", f'output_dir="{tmp_path / "res"}"']
                      + (["--force"] if where == "finished" else []))
    assert status == 0, capfd.readouterr().err[-2000:]
    assert folder.is_dir() and not folder.is_symlink()
    assert (folder / "metrics.csv").is_file()
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize("earlier", ["none", "file", "folder", "link to a folder"])
@pytest.mark.parametrize("entry", ["file", "folder"])
def test_move_aside_replaces_an_earlier_bad_entry_without_following_a_link(tmp_path, entry,
                                                                        earlier):
    """``atomic.move_aside``, the one set-aside of the checkpoints, the data cache and the
    Shakespeare stores: whatever ``<name>.bad`` already is, the entry takes its place, and
    a folder a link points to is left whole."""
    from tff_idp.atomic import move_aside
    path = tmp_path / "entry"
    if entry == "file":
        path.write_text("damaged")
    else:
        path.mkdir()
        (path / "inside").write_text("damaged")
    bad = tmp_path / "entry.bad"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    if earlier == "file":
        bad.write_text("old")
    elif earlier == "folder":
        bad.mkdir()
        (bad / "old").write_text("old")
    elif earlier == "link to a folder":
        bad.symlink_to(outside)
    assert move_aside(path) == bad
    assert not path.exists() and not bad.is_symlink()
    assert (bad.read_text() if entry == "file" else (bad / "inside").read_text()) == "damaged"
    assert (outside / "keep").read_text() == "keep"
