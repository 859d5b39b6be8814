"""The store of built federated data: arrays saved once under ``<root>/built/``, keyed by
source, partition and seed, and reused.

Each entry is a folder ``<root>/built/<source>/<key>/`` holding ``arrays.npz`` and
``meta.json``, written through :class:`tff_idp.atomic.AtomicFolder`: a build killed half-way
leaves only a ``.partial`` folder, which is never read and is replaced by the next build.
Client lists (ragged) are stored as one flat array plus offsets. An entry that cannot be
read (truncated, empty, garbage) or whose arrays do not fit together (offsets that do not
index their array, example ids beyond the data set) or whose arrays are not the bytes written
(meta.json records arrays.npz's SHA-256; entries written before it have none) is set aside
as ``<entry>.bad`` with one line on stderr and built again, as a bad checkpoint is. Only
regular files are read (a FIFO in a file's place would block the reader).
"""
from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np

from ..atomic import AtomicFolder, file_sha256, move_aside, regular_file


def pack_clients(parts: List[np.ndarray]) -> Dict[str, np.ndarray]:
    """Ragged per-client index lists as ``{"flat", "offsets"}``."""
    sizes = np.array([len(p) for p in parts], np.int64)
    flat = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
    return {"flat": flat, "offsets": np.concatenate([[0], np.cumsum(sizes)])}


def unpack_clients(flat: np.ndarray, offsets: np.ndarray) -> List[np.ndarray]:
    return [flat[a:b] for a, b in zip(offsets[:-1], offsets[1:])]


class DataStore:
    def __init__(self, root: str = "datasets"):
        self.root = Path(root) / "built"

    def path(self, source: str, **key) -> Path:
        """``<root>/built/<source>/<k1=v1-k2=v2...>`` (keys sorted; ``raw`` if none)."""
        name = "-".join(f"{k}={key[k]}" for k in sorted(key)) or "raw"
        return self.root / source / name.replace("/", "_")

    @staticmethod
    def read(path: Path, check: Optional[Callable[[Dict[str, np.ndarray]], Optional[str]]]
             = None) -> Optional[Dict[str, np.ndarray]]:
        """The arrays of a complete entry, or None: absent, never finished, or bad (set
        aside: :func:`set_aside`). ``check(arrays)``: why they are wrong, or None."""
        path = Path(path)
        if not (path / "meta.json").exists() and not (path / "meta.json").is_symlink():
            return None
        try:
            meta = json.loads(regular_file(path / "meta.json").read_text())
            digest = meta.get("sha256") if isinstance(meta, dict) else None
            npz = regular_file(path / "arrays.npz")      # a FIFO would block np.load
            if digest is not None and file_sha256(npz) != digest:
                set_aside(path, "its arrays are not the ones written (SHA-256 differs)")
                return None
            with np.load(npz, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError,
                UnicodeDecodeError) as e:
            set_aside(path, f"unreadable ({type(e).__name__})")
            return None
        why = consistency(arrays) or (check(arrays) if check is not None else None)
        if why:
            set_aside(path, why)
            return None
        return arrays
    @staticmethod
    def meta(path: Path) -> dict:
        return json.loads((Path(path) / "meta.json").read_text())

    @staticmethod
    def write(path: Path, arrays: Dict[str, np.ndarray], meta: dict) -> Path:
        with AtomicFolder(path, shared=True) as tmp:
            np.savez(tmp / "arrays.npz", **arrays)
            meta = dict(meta, sha256=file_sha256(tmp / "arrays.npz"))   # checked by every read
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
        return Path(path)

    def get_or_build(self, path: Path, build: Callable[[], Dict[str, np.ndarray]],
                     meta: Optional[dict] = None) -> Dict[str, np.ndarray]:
        found = self.read(path)
        if found is not None:
            return found
        arrays = build()
        self.write(path, arrays, meta or {})
        return arrays

    def pending_partition(self, source: str, key: dict,
                          build: Callable[[], List[np.ndarray]],
                          num_examples: Optional[int] = None):
        """Per-client example ids of a partition, read when stored, else built but not yet
        written: (ids, save), ``save`` the call that stores it (None when already stored).
        ``num_examples``: a stored partition naming an example beyond it is bad."""
        path = self.path(source, **key)

        def in_range(arrays):
            flat = arrays.get("flat")
            if num_examples is None or flat is None or not len(flat):
                return None
            if int(flat.min()) < 0 or int(flat.max()) >= num_examples:
                return f"example ids outside 0..{num_examples - 1}"
            return None

        found = self.read(path, in_range)
        packed = found if found is not None else pack_clients(build())
        save = None if found is not None else (
            lambda: self.write(path, packed, {"source": source, **key}))
        return unpack_clients(packed["flat"], packed["offsets"]), save

    def partition(self, source: str, key: dict,
                  build: Callable[[], List[np.ndarray]]) -> List[np.ndarray]:
        """Per-client example ids of a partition, built once per (source, key)."""
        parts, save = self.pending_partition(source, key, build)
        if save is not None:
            save()
        return parts


def consistency(arrays: Dict[str, np.ndarray]) -> Optional[str]:
    """Why a stored entry's arrays do not fit together, or None: every ``<p>offsets`` starts
    at 0, never decreases and ends at the length of its array (``<p>flat``, ``<p>x`` or
    ``<p>chars``); ``<p>x`` and ``<p>y`` have one length."""
    for key, offsets in arrays.items():
        if not key.endswith("offsets"):
            continue
        prefix = key[:-len("offsets")]
        target = next((arrays[prefix + k] for k in ("flat", "x", "chars")
                       if prefix + k in arrays), None)
        if offsets.ndim != 1 or len(offsets) == 0 or offsets[0] != 0 or \
                np.any(np.diff(offsets) < 0):
            return f"{key} is not a list of increasing offsets from 0"
        if target is not None and int(offsets[-1]) != len(target):
            return f"{key} ends at {int(offsets[-1])}, its array has {len(target)} entries"
    for prefix in ("train_", "test_"):
        if prefix + "x" in arrays and prefix + "y" in arrays and \
                len(arrays[prefix + "x"]) != len(arrays[prefix + "y"]):
            return f"{prefix}x and {prefix}y differ in length"
    return None


def set_aside(path: Path, why: str) -> None:
    """Move a bad entry out of the way (``<entry>.bad``, replacing an older one) with one
    line on stderr; the caller builds it again."""
    path = Path(path)
    try:
        move_aside(path)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
    print(f"data cache {path}: {why}; set aside as {path.name}.bad, building it again",
          file=sys.stderr)
