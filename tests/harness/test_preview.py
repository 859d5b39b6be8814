"""``run TABLE --dry-run`` (harness.preview): what is complete, copied or to train (from a
checkpoint's round), and how long, reading only; and engine.checkpoint.checkpoint_round,
the read-only peek it resumes from."""
import os
import subprocess

import numpy as np

from tff_idp.atomic import HOST
from tff_idp.engine import checkpoint as ck
from tff_idp.engine.fingerprint import run_fingerprint
from tff_idp.harness.table import expand, load_table

from .conftest import tiny_table


def _checkpoint(folder, fingerprint, rounds_done):
    folder.mkdir(parents=True, exist_ok=True)
    ck.save_checkpoint(folder, fingerprint, {
        "rounds_done": rounds_done, "backend": [np.zeros(3)], "personal": [],
        "rng": {"state": 1}, "participation": np.zeros(5, int),
        "history": [[[0.1, 1.0]]] * rounds_done, "rows": [], "server_precision": np.zeros(5),
        "segments": None})


def _tree(root):
    return sorted((str(p.relative_to(root)), p.stat().st_mtime_ns) for p in root.rglob("*"))


def test_checkpoint_round_reads_only_an_intact_checkpoint_of_the_same_run(tmp_path):
    _checkpoint(tmp_path, "fp", 7)
    assert ck.checkpoint_round(tmp_path, "fp") == 7
    assert ck.checkpoint_round(tmp_path, "other") is None          # another config's
    data = bytearray((tmp_path / ck.CHECKPOINT).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / ck.CHECKPOINT).write_bytes(bytes(data))
    before = _tree(tmp_path)
    assert ck.checkpoint_round(tmp_path, "fp") is None             # damaged: not counted,
    assert _tree(tmp_path) == before                               # and not set aside
    assert ck.checkpoint_round(tmp_path / "none", "fp") is None


def test_dry_run_lists_what_would_train_from_where_and_how_long_writing_nothing(
        tmp_path, capfd, monkeypatch):
    from tff_idp import run
    table = tiny_table(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert run.main([str(table), "--scale", "smoke", "--quiet", "--no-report", "--axis", "1x",
                     "--methods", "p_fedavg"]) == 0              # 1 of the 4 smoke runs
    spec = load_table(str(table))
    units = {u.label: u for u in expand(spec, "smoke")}
    resumed = units["digits/2x/dp_fedavg/seed0"]
    _checkpoint(resumed.folder.with_name(resumed.folder.name + ".partial"),
                run_fingerprint(resumed.cfg, "dp_fedavg"), 1)
    root = tmp_path / "results"
    before = _tree(root)
    capfd.readouterr()
    assert run.main([str(table), "--scale", "smoke", "--dry-run"]) == 0
    out = capfd.readouterr().out
    assert _tree(root) == before                                   # nothing written
    lines = out.splitlines()
    assert lines[0] == ("tiny at scale smoke, dry run (nothing trained, copied or written): "
                        "4 runs")
    assert lines[1:4] == ["  complete: 1", "  to copy: 0 (an equal complete run in "
                          "runs/archive/ or another table's folders)", "  to train: 3"]
    rows = {l.split()[0]: l for l in lines[4:7]}
    assert set(rows) == {"digits/1x/dp_fedavg/seed0", "digits/2x/p_fedavg/seed0",
                         "digits/2x/dp_fedavg/seed0"}
    assert "from round 1 of 2 " in rows["digits/2x/dp_fedavg/seed0"]
    assert "training now" not in out
    assert "2 rounds from the start" in rows["digits/2x/p_fedavg/seed0"]
    assert all(" ~" in row for row in rows.values())                # a time each
    assert lines[7].startswith("  here: ~") and "the 1 finished run kept on this kind of " \
        "machine" in lines[7]
    assert lines[-1].startswith("  on one NVIDIA RTX A6000: ~")
    # a unit another live process holds the lock of is marked; a dead one's lock is not
    lock = resumed.folder.with_name(resumed.folder.name + ".lock")
    lock.write_text(f"{HOST}:{os.getpid()}\n")
    assert run.main([str(table), "--scale", "smoke", "--dry-run"]) == 0
    assert f"from round 1 of 2 (training now: {HOST}:{os.getpid()})" in capfd.readouterr().out
    dead = subprocess.Popen(["true"])
    dead.wait()                                  # a pid that has ended
    lock.write_text(f"{HOST}:{dead.pid}\n")
    assert run.main([str(table), "--scale", "smoke", "--dry-run"]) == 0
    out = capfd.readouterr().out
    assert "from round 1 of 2 " in out and "training now" not in out
    lock.unlink()
    before = _tree(root)
    # --force: every run from the start; --axis: its column only, timed by the whole table
    assert run.main([str(table), "--scale", "smoke", "--dry-run", "--force", "--axis",
                     "2x"]) == 0
    out = capfd.readouterr().out
    assert "  complete: 0 (--force: trained again)" in out and "  to train: 2" in out
    assert "from round" not in out and "the 1 finished run kept" in out
    assert _tree(root) == before
    # refused in one line where a table flag is, and for an experiment config
    assert run.main(["--dry-run"]) == 2
    assert "--dry-run=True: a flag of table configs" in capfd.readouterr().err
