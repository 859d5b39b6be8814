"""The store of built federated data: arrays saved once under ``<root>/built/``, keyed by
source, partition and seed, and reused.

Each entry is a folder ``<root>/built/<source>/<key>/`` holding ``arrays.npz`` and
``meta.json``, written through :class:`tff_idp.atomic.AtomicFolder`: a build killed half-way
leaves only a ``.partial`` folder, which is never read and is replaced by the next build.
Client lists (ragged) are stored as one flat array plus offsets.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np

from ..atomic import AtomicFolder


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
    def read(path: Path) -> Optional[Dict[str, np.ndarray]]:
        """The arrays of a complete entry, or None (absent or never finished)."""
        path = Path(path)
        if not (path / "meta.json").is_file():
            return None
        with np.load(path / "arrays.npz", allow_pickle=False) as z:
            return {k: z[k] for k in z.files}

    @staticmethod
    def meta(path: Path) -> dict:
        return json.loads((Path(path) / "meta.json").read_text())

    @staticmethod
    def write(path: Path, arrays: Dict[str, np.ndarray], meta: dict) -> Path:
        with AtomicFolder(path, shared=True) as tmp:
            np.savez(tmp / "arrays.npz", **arrays)
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
                          build: Callable[[], List[np.ndarray]]):
        """Per-client example ids of a partition, read when stored, else built but not yet
        written: (ids, save), ``save`` the call that stores it (None when already stored)."""
        path = self.path(source, **key)
        found = self.read(path)
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
