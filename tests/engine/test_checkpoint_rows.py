"""Checkpoints grow with the state, not with the history (issue 61, class 1): the metrics
rows are appended to checkpoint-rows.jsonl, the npz holds where they end and their digest;
a kill between the append and the npz, a damaged rows file and an old checkpoint with its
rows inside are each handled."""
import json

import numpy as np
import pytest

from tff_idp.engine import checkpoint as ck


def _save(folder, rows, rounds_done):
    ck.save_checkpoint(folder, "fp", {
        "rounds_done": rounds_done, "backend": [np.zeros(3)], "personal": [],
        "rng": {"state": 1}, "participation": np.zeros(5, int),
        "history": [[[0.1, 1.0]]] * rounds_done, "rows": rows, "server_precision": np.zeros(5),
        "segments": None})


def _rows(n):
    return [{"round": i + 1, "cohort": 3, "test_accuracy": 0.5 + i / 1e6,
             "seconds": 0.1} for i in range(n)]


def test_the_npz_does_not_grow_with_the_rows_and_they_come_back(tmp_path):
    rows = _rows(20_000)
    _save(tmp_path, rows[:10], 10)
    small = (tmp_path / ck.CHECKPOINT).stat().st_size
    _save(tmp_path, rows, 10)
    # the npz grows with the mechanisms per round (fixed here), never with the rows: the
    # counts' digits only (the rows were 1.2 MB of it)
    assert (tmp_path / ck.CHECKPOINT).stat().st_size - small < 64
    size = (tmp_path / ck.ROWS).stat().st_size
    _save(tmp_path, rows + _rows(1), 10)           # appends one line, rewrites nothing
    assert (tmp_path / ck.ROWS).stat().st_size - size == len(json.dumps(_rows(1)[0])) + 1
    loaded = ck.load_checkpoint(tmp_path, "fp")
    assert loaded["rows"] == rows + _rows(1)


def test_rows_past_the_checkpoint_are_ignored_and_cut(tmp_path):
    """A kill after the append, before the npz: the next load reads the recorded prefix."""
    _save(tmp_path, _rows(5), 5)
    with open(tmp_path / ck.ROWS, "a") as f:
        f.write(json.dumps({"round": 6}) + "\n" + '{"round": 7, "cut mid')
    loaded = ck.load_checkpoint(tmp_path, "fp")
    assert loaded["rows"] == _rows(5)
    _save(tmp_path, _rows(6), 6)
    assert ck.load_checkpoint(tmp_path, "fp")["rows"] == _rows(6)


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete"])
def test_a_damaged_rows_file_sets_the_checkpoint_aside(tmp_path, capfd, damage):
    _save(tmp_path, _rows(50), 50)
    ck._written.clear()                              # another process reads it
    path = tmp_path / ck.ROWS
    data = path.read_bytes()
    if damage == "flip":
        path.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    elif damage == "truncate":
        path.write_bytes(data[:-10])
    else:
        path.unlink()
    assert ck.load_checkpoint(tmp_path, "fp") is None
    assert (tmp_path / (ck.CHECKPOINT + ".bad")).exists()
    assert "starting over" in capfd.readouterr().err


def test_a_checkpoint_with_its_rows_inside_still_loads(tmp_path):
    """Checkpoints written before the rows file kept the rows in the npz's JSON."""
    arrays = {"backend_0": np.zeros(3), "participation": np.zeros(5, np.int64),
              "history": np.asarray([[[0.1, 1.0]]] * 2, np.float64),
              "server_precision": np.zeros(5)}
    meta = {"fingerprint": "fp", "rounds_done": 2, "backend": 1, "personal": 0,
            "rng": {"state": 1}, "rows": _rows(2), "segments": None}
    meta["sha256"] = ck._digest(arrays, meta)
    np.savez(tmp_path / ck.CHECKPOINT, meta=np.array(json.dumps(meta)), **arrays)
    assert ck.load_checkpoint(tmp_path, "fp")["rows"] == _rows(2)
