"""Atomic files and folders: nothing half-written is ever read as complete.

A folder is written as ``<name>.partial/`` and renamed to ``<name>/`` once everything is on
disk (a rename within one file system is atomic); a file is written to ``<name>.tmp`` and
moved into place. Used by the results folders and by the data set store.
"""
from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

HOST = socket.gethostname().replace("-", "_")


class FolderLocked(RuntimeError):
    """Another live process (or one on another host) holds the lock of a folder."""


class FolderLock:
    """``with FolderLock(path):`` an exclusive lock beside a folder, ``<path>.lock``, made
    with O_CREAT | O_EXCL (atomic on local and NFS file systems) and naming the host and
    pid of its holder. A lock left by a dead process of this host is taken over; one held by
    a live process, or by any process of another host (whose liveness cannot be judged
    from here), refuses with one line naming it."""

    def __init__(self, path: Path):
        self.lock = Path(path).with_name(Path(path).name + ".lock")

    def __enter__(self):
        self.lock.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self.lock.read_text().strip() if self.lock.exists() else ""
                host, _, pid = holder.partition(":")
                if host == HOST and pid.isdigit() and not _alive(int(pid)):
                    self.lock.unlink(missing_ok=True)     # its holder died here: take over
                    continue
                raise FolderLocked(
                    f"{self.lock.with_suffix('')}: in use by process {pid or '?'} on "
                    f"{host or '?'} ({self.lock}); if that run is gone, delete the lock file")
            with os.fdopen(fd, "w") as f:
                f.write(f"{HOST}:{os.getpid()}\n")
            return self
        raise FolderLocked(f"{self.lock}: could not be taken")

    def __exit__(self, *exc):
        self.lock.unlink(missing_ok=True)
        return False


def atomic_write_text(path: Path, text: str) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class AtomicFolder:
    """``with AtomicFolder(path) as tmp:`` write into ``tmp``; on success it becomes ``path``
    (replacing an older one); on an exception the ``.partial`` folder is left for inspection
    and removed by the next attempt, unless ``keep_partial`` (a run resuming from the
    checkpoint it keeps there).

    ``shared=True`` (the data store: several worker processes may build the same entry at
    once, and an entry's content depends only on its key): each writer uses its own
    ``.partial-<pid>`` folder, the first to finish renames it into place and a later one
    drops its copy instead of replacing a folder another process may be reading."""

    def __init__(self, path: Path, keep_partial: bool = False, shared: bool = False):
        self.path = Path(path)
        suffix = f".partial-{HOST}-{os.getpid()}" if shared else ".partial"
        self.partial = self.path.with_name(self.path.name + suffix)
        self.keep_partial = keep_partial     # resume: keep what an interrupted run left
        self.shared = shared

    def __enter__(self) -> Path:
        if self.shared:
            self._remove_abandoned()
        if self.partial.exists() and not self.keep_partial:
            shutil.rmtree(self.partial)
        self.partial.mkdir(parents=True, exist_ok=True)
        return self.partial

    def _remove_abandoned(self) -> None:
        """Partial folders of writers that no longer run (killed builds)."""
        for other in self.path.parent.glob(self.path.name + ".partial*"):
            tag = other.name[len(self.path.name) + len(".partial"):].lstrip("-")
            host, _, pid = tag.rpartition("-") if "-" in tag else ("", "", tag)
            if host and host != HOST:
                continue             # another host's writer cannot be judged from here
            if pid.isdigit() and _alive(int(pid)):
                continue             # a live writer here (or a pid-only name of old)
            shutil.rmtree(other, ignore_errors=True)

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            return False
        if not self.shared:
            if self.path.exists():
                shutil.rmtree(self.path)
            os.replace(self.partial, self.path)
            return False
        try:
            os.rename(self.partial, self.path)
        except OSError:
            if not self.path.exists():
                raise
            shutil.rmtree(self.partial)      # another writer finished the same entry first
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
