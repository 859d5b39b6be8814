"""Checkpoints of a run in progress: arrays and JSON, never pickle, with a checksum.

``checkpoint.npz`` (read with ``allow_pickle=False``: opening someone else's results folder
runs no code) holds the backend's state arrays, the personal store, the ledger's
participation counts, per-round mechanisms and per-client server-side precision, and one
JSON string: the run fingerprint, the rounds done, the sampler's generator state, where the
rows so far end in ``checkpoint-rows.jsonl`` (count, bytes, SHA-256 of that prefix), the
segments (which process and machine trained which rounds: ``engine.segments``) and a
SHA-256 over everything else. The ledger itself is rebuilt from the config and these
counts, not stored as an object.

The metrics rows live in the append-only ``checkpoint-rows.jsonl`` (one JSON row a line):
a checkpoint appends the rows since the previous one and rewrites only the npz, so its cost
grows with the state, not with the history (near the allowed 10^6 rounds the rows were
about 1.2 GB rewritten every checkpoint). Lines past the recorded prefix (a kill between
the append and the npz) are ignored and cut at the next write; a prefix whose digest does
not match sets the checkpoint aside like any other damage.

Every round also writes ``heartbeat.json`` (when, which round, how long, host and pid):
``harness.runner.folder_state`` tells a running unit from a stalled one by it, and a failed
run's record (``harness.failures``) names the round that raised.

A checkpoint that cannot be read, fails its checksum (a flipped bit) or was made with another
config is set aside as ``checkpoint.npz.bad`` with one line on stderr, and the run starts
over; it never blocks a run and is never used silently. Written to a temporary name and
moved into place, so a kill mid-write leaves the previous checkpoint.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from ..atomic import move_aside, regular_file

CHECKPOINT = "checkpoint.npz"
ROWS = "checkpoint-rows.jsonl"
OLD_CHECKPOINT = "checkpoint.pkl"       # sessions 1-4 (pickle): never read, set aside

# per checkpoint folder, in this process: (rows written, bytes, running SHA-256 of them),
# so that a checkpoint appends only its new rows
_written: Dict[Path, tuple] = {}


def _plain(x):
    """numpy scalars in the rows as Python numbers."""
    if hasattr(x, "item"):
        return x.item()
    raise TypeError(f"{type(x).__name__} is not JSON")


def _digest(arrays: Dict[str, np.ndarray], meta: dict) -> str:
    h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode())
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_checkpoint(folder: Path, fingerprint: str, saved: dict) -> None:
    """``saved`` (:meth:`tff_idp.engine.run_state.RunState.snapshot`: rounds_done, backend,
    personal, rng, participation, history, server_precision, rows, segments) into
    ``folder``; :func:`load_checkpoint` returns the same dict."""
    backend, personal, rows = saved["backend"], saved["personal"], saved["rows"]
    arrays = {f"backend_{i}": np.asarray(a) for i, a in enumerate(backend)}
    arrays.update({f"personal_{i}": np.asarray(a) for i, a in enumerate(personal)})
    arrays["participation"] = np.asarray(saved["participation"], np.int64)
    # [rounds, groups, (q, sigma)]
    arrays["history"] = np.asarray(saved["history"], np.float64)
    arrays["server_precision"] = np.asarray(saved["server_precision"], np.float64)
    meta = {"fingerprint": fingerprint, "rounds_done": int(saved["rounds_done"]),
            "backend": len(backend), "personal": len(personal), "rng": saved["rng"],
            "rows_file": _append_rows(Path(folder), rows), "segments": saved["segments"]}
    meta = json.loads(json.dumps(meta, default=_plain))     # as it will be read back
    meta["sha256"] = _digest(arrays, meta)
    arrays["meta"] = np.array(json.dumps(meta, default=_plain))
    tmp = Path(folder) / (CHECKPOINT + ".tmp.npz")
    _clear_non_regular(tmp)
    np.savez(tmp, **arrays)
    _clear_non_regular(Path(folder) / CHECKPOINT)
    os.replace(tmp, Path(folder) / CHECKPOINT)


def _non_regular(path: Path) -> bool:
    """A link, FIFO, device or folder where a checkpoint file goes (exists, not regular)."""
    return path.is_symlink() or (path.exists() and not path.is_file())


def _clear_non_regular(path: Path) -> None:
    """Moves a link, FIFO, device or folder out of a checkpoint file's place (to
    ``<name>.bad``): writing would block on a FIFO, fail on a folder, or go through a link
    out of the run folder."""
    if _non_regular(path):
        bad = move_aside(path)
        print(f"{path.name}: not a regular file; set aside as {bad.name}", file=sys.stderr)


def _row_bytes(rows: List[dict]) -> bytes:
    return "".join(json.dumps(r, default=_plain) + "\n" for r in rows).encode()


def _append_rows(folder: Path, rows: List[dict]) -> dict:
    """Write the rows not yet in ``folder``'s rows file (all of them the first time in this
    process, or when the file is not what this process wrote), synced to disk before the
    npz that points at them; returns {"count", "bytes", "sha256"} of the file's prefix."""
    key = folder.resolve()
    path = folder / ROWS
    count, size, digest = _written.get(key, (0, 0, None))
    _clear_non_regular(path)
    fresh = digest is None or count > len(rows) or not path.is_file() or \
        path.stat().st_size < size
    if fresh:
        count, size, digest = 0, 0, hashlib.sha256()
    data = _row_bytes(rows[count:])
    with open(path, "wb" if fresh else "r+b") as f:
        f.seek(size)
        f.truncate()
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    digest.update(data)
    _written[key] = (len(rows), size + len(data), digest)
    return {"count": len(rows), "bytes": size + len(data), "sha256": digest.hexdigest()}


def _read_rows(folder: Path, pointer: dict) -> List[dict]:
    """The rows of ``pointer``'s prefix of the rows file; ValueError when it is short or its
    digest differs. Remembers the prefix, so the next checkpoint appends after it."""
    path = folder / ROWS
    if _non_regular(path):
        raise ValueError(f"{ROWS} is not a regular file")
    if not path.is_file():
        raise ValueError(f"{ROWS} is missing")
    with open(path, "rb") as f:
        data = f.read(int(pointer["bytes"]))
    digest = hashlib.sha256(data)
    if len(data) != pointer["bytes"] or digest.hexdigest() != pointer["sha256"]:
        raise ValueError(f"{ROWS} does not match the checkpoint")
    rows = [json.loads(line) for line in data.decode().splitlines()]
    if len(rows) != pointer["count"]:
        raise ValueError(f"{ROWS} holds {len(rows)} rows, not {pointer['count']}")
    _written[folder.resolve()] = (len(rows), len(data), digest)
    return rows


def _set_aside(path: Path, why: str) -> None:
    bad = move_aside(path)
    print(f"{why}: starting over (set aside as {bad.name})", file=sys.stderr)


def _read_checkpoint(path: Path):
    """(arrays, meta, intact) of the checkpoint file at ``path``: its arrays, its meta data
    without the checksum, and whether the checksum holds; raises on a file that does not
    read as one."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("meta")))
    stored = meta.pop("sha256")
    return arrays, meta, stored == _digest(arrays, meta)


def load_checkpoint(folder: Optional[Path], fingerprint: str) -> Optional[dict]:
    """The checkpoint in ``folder`` made with ``fingerprint``, or None (none there, or one
    set aside: unreadable, checksum failed, another config). Returns {"rounds_done",
    "backend", "personal", "rng", "participation", "history", "rows", "server_precision",
    "segments"} (segments None in a checkpoint made before they were kept)."""
    if folder is None:
        return None
    folder = Path(folder)
    old = folder / OLD_CHECKPOINT
    if old.is_file():
        _set_aside(old, "an old-format checkpoint (pickle) is not read")
    path = folder / CHECKPOINT
    if _non_regular(path):
        _set_aside(path, "checkpoint is not a regular file")
        return None
    if not path.is_file():
        return None
    try:
        arrays, meta, intact = _read_checkpoint(path)
    except Exception:  # noqa: BLE001 (a truncated or foreign file fails in many ways)
        _set_aside(path, "checkpoint unreadable")
        return None
    k = meta.get("rounds_done", "?")
    if not intact:
        _set_aside(path, f"checkpoint at round {k} fails its checksum")
        return None
    if meta["fingerprint"] != fingerprint:
        _set_aside(path, f"checkpoint at round {k} was made with another config")
        return None
    if "rows_file" in meta:
        try:
            meta["rows"] = _read_rows(folder, meta["rows_file"])
        except (OSError, ValueError, UnicodeDecodeError) as e:
            _set_aside(path, f"checkpoint at round {k}: {e}")
            return None
    return {"rounds_done": int(meta["rounds_done"]),
            "backend": [arrays[f"backend_{i}"] for i in range(meta["backend"])],
            "personal": [arrays[f"personal_{i}"] for i in range(meta["personal"])],
            "rng": meta["rng"], "participation": arrays["participation"],
            "history": arrays["history"].tolist(), "rows": meta["rows"],
            "server_precision": arrays["server_precision"], "segments": meta.get("segments")}


def checkpoint_round(folder: Path, fingerprint: str) -> Optional[int]:
    """The round a run would resume from: that of the checkpoint in ``folder`` when it is a
    regular file, reads, passes its checksum and was made with ``fingerprint``; else None.
    Reads only (:func:`load_checkpoint` sets a bad one aside): for a dry run."""
    path = Path(folder) / CHECKPOINT
    if _non_regular(path) or not path.is_file():
        return None
    try:
        _, meta, intact = _read_checkpoint(path)
        return int(meta["rounds_done"]) if intact and meta["fingerprint"] == fingerprint \
            else None
    except Exception:  # noqa: BLE001 (as load_checkpoint: a damaged file fails in many ways)
        return None


HEARTBEAT = "heartbeat.json"


def write_heartbeat(folder: Path, rounds_done: int, round_seconds: float,
                    mean_round_seconds: Optional[float] = None) -> None:
    """A small JSON in the run's partial folder after every round (when, which round, how
    long it took, the mean over this process's rounds so far, checkpoints included, host
    and pid): ``harness.runner.folder_state`` tells a running unit from a stalled one by
    it, ``harness.runner.rounds_of`` the time a run has left, and a failed run's record
    the round that raised."""
    beat = {"time": time.time(), "rounds_done": rounds_done, "round_seconds": round_seconds,
            "host": socket.gethostname(), "pid": os.getpid()}
    if mean_round_seconds is not None:
        beat["mean_round_seconds"] = mean_round_seconds
    (folder / HEARTBEAT).write_text(json.dumps(beat))


def read_heartbeat(folder: Path) -> Optional[dict]:
    """The heartbeat :func:`write_heartbeat` left in ``folder``, or None when there is none,
    it is not a regular file (a FIFO would block the reader) or it does not parse."""
    try:
        beat = json.loads(regular_file(folder / HEARTBEAT).read_text())
    except (OSError, ValueError):
        return None
    return beat if isinstance(beat, dict) else None
