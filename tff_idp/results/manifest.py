"""A finished run folder's content digests (``files.sha256``, ``sha256sum`` format): every
result file's SHA-256, written last, so that a byte changed after the run (a flipped bit, an
edited accuracy, a file swapped for another run's) is seen by everything that reads the
folder back (``engine.finished_runs.complete_run``: the run is trained again; ``report`` and
``api.read_run``: the run is unreadable, in one line), instead of being printed as a number.

Run folders written before the manifest existed have none and are read as before (the
committed archives); a run written with one records it in summary.json
(``"manifest": true``), so deleting the manifest is itself damage. Only regular files are
read (a FIFO or a link out of the folder in a file's place is damage, never followed).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

from ..atomic import file_sha256
from ..privacy.threat_model import MANIFEST
# at most this many bytes are hashed per file: a result file is kilobytes to megabytes, a
# file grown past it (a 200 MB line appended) is damage, not something to read
MAX_BYTES = 256 * 2 ** 20


def _digest(path: Path) -> str:
    if path.is_symlink() or not path.is_file():
        raise ValueError(f"{path.name}: not a regular file")
    if path.stat().st_size > MAX_BYTES:
        raise ValueError(f"{path.name}: {path.stat().st_size:,} bytes, more than a result "
                         f"file holds ({MAX_BYTES:,})")
    return file_sha256(path)


def write_manifest(folder: Path, names: Iterable[str]) -> None:
    """``files.sha256`` in ``folder`` for the files ``names`` (sorted; written last)."""
    folder = Path(folder)
    lines = [f"{_digest(folder / n)}  {n}\n" for n in sorted(set(names))]
    (folder / MANIFEST).write_text("".join(lines))


def manifest_problem(folder: Path, expected: bool) -> Optional[str]:
    """None when every file the manifest lists is there with its digest (or when there is
    no manifest and none is ``expected``: a run from before it); otherwise one line naming
    the file and what is wrong with it."""
    folder = Path(folder)
    path = folder / MANIFEST
    if not path.exists() and not path.is_symlink():
        return f"{path}: missing (the run wrote one)" if expected else None
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 1 << 20:
            return f"{path}: not a regular file of digests"
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        return f"{path}: {e}"
    if not lines:
        return f"{path}: empty"
    for line in lines:
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or "/" in name or name in ("", ".", ".."):
            return f"{path}: a line that is not '<sha256>  <file>'"
        try:
            if _digest(folder / name) != digest:
                return f"{folder / name}: its content changed after the run (SHA-256 differs)"
        except (OSError, ValueError) as e:
            return f"{folder / name}: {e}"
    return None
