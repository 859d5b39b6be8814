"""Atomic files and folders: nothing half-written is ever read as complete.

A folder is written as ``<name>.partial/`` and renamed to ``<name>/`` once everything is on
disk (a rename within one file system is atomic); a file is written to ``<name>.tmp`` and
moved into place. Used by the results folders and by the data set store.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class AtomicFolder:
    """``with AtomicFolder(path) as tmp:`` write into ``tmp``; on success it becomes ``path``
    (replacing an older one); on an exception the ``.partial`` folder is left for inspection
    and removed by the next attempt, unless ``keep_partial`` (a run resuming from the
    checkpoint it keeps there)."""

    def __init__(self, path: Path, keep_partial: bool = False):
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.keep_partial = keep_partial     # resume: keep what an interrupted run left

    def __enter__(self) -> Path:
        if self.partial.exists() and not self.keep_partial:
            shutil.rmtree(self.partial)
        self.partial.mkdir(parents=True, exist_ok=True)
        return self.partial

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            if self.path.exists():
                shutil.rmtree(self.path)
            os.replace(self.partial, self.path)
        return False
