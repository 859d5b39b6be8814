"""Atomic files and folders: nothing half-written is ever read as complete.

A folder is written as ``<name>.partial/`` and renamed to ``<name>/`` once everything is on
disk (a rename within one file system is atomic); a file is written to ``<name>.tmp`` and
moved into place. Used by the results folders and by the data set store.
"""
from __future__ import annotations

import errno
import glob
import os
import shutil
import socket
import sys
import time
from pathlib import Path

from .errors import ConfigError

HOST = socket.gethostname().replace("-", "_")


class FolderLocked(RuntimeError):
    """Another live process (or one on another host) holds the lock of a folder."""


class FolderLock:
    """``with FolderLock(path):`` an exclusive lock beside a folder, ``<path>.lock``, made
    with O_CREAT | O_EXCL (atomic on local and NFS file systems) and naming the host and
    pid of its holder. A lock left by a dead process of this host is taken over, and so is
    one whose pid now names a process started after the lock was written (the pid was
    reused, e.g. after a reboot); one held by a live process, or by any process of another
    host (whose liveness cannot be judged from here), refuses with one line naming it, as
    does a folder in the lock's place."""

    def __init__(self, path: Path):
        self.lock = lock_file(path)

    def __enter__(self):
        self.lock.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except (FileExistsError, IsADirectoryError):
                if self.lock.is_dir():
                    raise FolderLocked(f"{self.lock}: a folder stands where the lock file "
                                       "goes; remove it")
                host, _, pid = _read_holder(self.lock).partition(":")
                if _left_by_dead_process(host, pid, self.lock):
                    self.lock.unlink(missing_ok=True)     # its holder is gone: take over
                    continue
                if not pid.isdigit() and _age(self.lock) > STALE_EMPTY_LOCK_SECONDS:
                    print(f"{self.lock}: names no process (empty or unreadable, e.g. left "
                          "by a full disk); treated as stale and taken over", file=sys.stderr)
                    self.lock.unlink(missing_ok=True)
                    continue
                raise FolderLocked(
                    f"{self.lock.with_suffix('')}: in use by process {pid or '?'} on "
                    f"{host or '?'} ({self.lock}); if that run is gone, delete the lock file")
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(f"{HOST}:{os.getpid()}\n")
            except OSError:                 # e.g. a full disk: never leave an empty lock
                self.lock.unlink(missing_ok=True)
                raise
            return self
        raise FolderLocked(f"{self.lock}: could not be taken")

    def __exit__(self, *exc):
        self.lock.unlink(missing_ok=True)
        return False


STALE_EMPTY_LOCK_SECONDS = 10.0   # a lock naming nobody is being written, or was abandoned


def lock_holder(path: Path) -> str:
    """Who holds ``path``'s :class:`FolderLock`, as "host:pid", or "": no lock, one that
    names nobody, or one a dead process of this host left (what ``FolderLock`` would take
    over). A process of another host counts as holding it, as there. Reads only."""
    lock = lock_file(path)
    holder = _read_holder(lock)
    host, _, pid = holder.partition(":")
    if not pid.isdigit() or _left_by_dead_process(host, pid, lock):
        return ""
    return holder


def lock_file(path: Path) -> Path:
    """The file of ``path``'s :class:`FolderLock`: ``<path>.lock`` beside it."""
    return Path(path).with_name(Path(path).name + ".lock")


def _left_by_dead_process(host: str, pid: str, lock: Path) -> bool:
    """The lock names a process of this host that no longer holds it (gone, or its pid
    reused by a process started after the lock was written): what :class:`FolderLock`
    takes over."""
    return host == HOST and pid.isdigit() and not _holds(int(pid), lock)


def _read_holder(lock: Path) -> str:
    """The lock's "host:pid", or "" when it names nobody. Only a regular file, not through a
    link, and its first kilobyte: a FIFO would block the reader, /dev/zero has no end."""
    try:
        if lock.is_symlink() or not lock.is_file():
            return ""
        with open(lock, encoding="utf-8") as f:
            return f.read(1024).strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def is_out_of_space(e: BaseException) -> bool:
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)


def out_of_space_line(e: OSError, folder: Path) -> str:
    """One line for a write into ``folder`` that failed for lack of space: the file (when
    the error names it), the free space left, what to do."""
    where = Path(e.filename) if e.filename else Path(folder)
    folder = where if where.is_dir() else where.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = f"{shutil.disk_usage(folder).free / 1024:.0f} KB free"
    except OSError:
        free = "free space unknown"
    return (f"no space left on device writing {where} ({free} in {folder}); nothing was "
            "marked complete: free some space and run the same command")


# the other reasons a write into a results folder fails, besides space (errno -> words)
WRITE_FAILURES = {errno.EFBIG: "file too large (a file-size limit, e.g. ulimit -f)",
                  errno.EROFS: "read-only file system",
                  errno.EACCES: "permission denied", errno.EPERM: "operation not permitted",
                  errno.ENOENT: "a folder was removed", errno.ENOTDIR: "not a folder"}


def write_failure_line(e: BaseException, folder: Path):
    """One line for a run's write that failed (no space, a file-size limit, a file system
    made read-only, a folder removed or unwritable), or None for any other error."""
    if is_out_of_space(e):
        return out_of_space_line(e, folder)
    if isinstance(e, OSError) and e.errno in WRITE_FAILURES:
        return (f"{WRITE_FAILURES[e.errno]} writing {e.filename or folder}: the run's "
                "results could not be written; nothing was marked complete, fix it and run "
                "the same command")
    return None


def folder_conflict(path: Path):
    """Why a folder cannot be made (or used) at ``path``, or None: it or one of its parents
    is a regular file, or a symbolic link that leads nowhere (dangling, or a loop)."""
    p = Path(path).absolute()
    for part in [p] + list(p.parents):
        if part.is_symlink() and not part.exists():
            return f"{part} is a symbolic link that leads nowhere (dangling, or a loop)"
        if part.exists() and not part.is_dir():
            return f"{part} is a file, not a folder"
    return None


def run_folder_conflict(folder: Path):
    """:func:`folder_conflict` of a results folder or of its ``.partial`` sibling."""
    folder = Path(folder)
    return folder_conflict(folder) or folder_conflict(
        folder.with_name(folder.name + ".partial"))


def regular_file(path: Path) -> Path:
    """``path`` when it is a regular file; OSError otherwise (a FIFO put in a run file's
    place would block its reader forever, a device could be endless)."""
    import stat
    mode = os.stat(path).st_mode                 # FileNotFoundError when missing
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return Path(path)


def move_aside(path: Path) -> Path:
    """``path`` (a file, a folder or a link) renamed ``<name>.bad``, replacing an earlier
    ``<name>.bad`` (a folder removed, never followed through a link): where it went. The
    stores, the checkpoints and the built data sets set a damaged entry aside so."""
    path = Path(path)
    bad = path.with_name(path.name + ".bad")
    if bad.is_dir() and not bad.is_symlink():
        shutil.rmtree(bad)
    elif bad.exists() or bad.is_symlink():
        bad.unlink()
    os.replace(path, bad)
    return bad


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in 1 MB blocks."""
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def atomic_savefig(fig, path: Path, **kwargs) -> Path:
    """``fig.savefig`` to ``<stem>.tmp<suffix>`` beside ``path`` (the suffix keeps the image
    format), then moved into place: a kill mid-write leaves the previous figure or none,
    never a truncated one. The temporary files of writers that were killed (their pid is no
    longer alive on this host) are removed first, so they do not pile up beside it."""
    path = Path(path)
    for stale in path.parent.glob(f"{glob.escape(path.stem)}.tmp-*{path.suffix}"):
        pid = stale.name[len(path.stem) + 5:len(stale.name) - len(path.suffix)]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            stale.unlink(missing_ok=True)
    tmp = path.with_name(f"{path.stem}.tmp-{os.getpid()}{path.suffix}")
    try:
        fig.savefig(tmp, **kwargs)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


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
        if self.partial.is_symlink() or (self.partial.exists() and not self.partial.is_dir()):
            # not a folder this code made: writing through it would put the run's files
            # wherever it leads (and make the finished run that link)
            print(f"warning: {self.partial} is not a folder of ours (a link or a file): "
                  "removed, what a link leads to untouched; starting afresh", file=sys.stderr)
            _discard(self.partial)
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
            if self.path.exists() or self.path.is_symlink():
                _discard(self.path)            # a link in the run's place: the link only
            os.replace(self.partial, self.path)
            return False
        try:
            os.rename(self.partial, self.path)
        except OSError:
            if not self.path.exists():
                raise
            shutil.rmtree(self.partial)      # another writer finished the same entry first
        return False


def _discard(path: Path) -> None:
    """Remove ``path``: a link or a file itself (never what a link leads to), a folder with
    its content."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


def _holds(pid: int, lock: Path) -> bool:
    """Whether process ``pid`` of this host can be the one that wrote ``lock``: alive, and
    started before the lock was written (a process started later got a reused pid)."""
    if not _alive(pid):
        return False
    started = process_start_time(pid)
    try:
        written = lock.stat().st_mtime
    except OSError:
        return True
    return started is None or started <= written + 2.0


def process_start_time(pid: int):
    """When process ``pid`` started (seconds since the epoch), from /proc (Linux: field 22
    of /proc/<pid>/stat in clock ticks after boot, plus /proc/stat's btime); None where
    /proc cannot say."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        ticks = int(fields[19])               # field 22 overall; 20th after the name
        with open("/proc/stat") as f:
            btime = next(int(line.split()[1]) for line in f if line.startswith("btime"))
        return btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_writable_dir(key: str, path: str) -> None:
    """The folder ``path`` can be created (or is there) and written: its nearest existing
    ancestor must be a writable directory."""
    why = folder_conflict(Path(path))
    if why:
        raise ConfigError(f"{key}={path!r}: {why}")
    p = Path(path).absolute()
    probe = p
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"{key}={path!r}: {probe} is a file, not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{key}={path!r}: {probe} is not writable")
