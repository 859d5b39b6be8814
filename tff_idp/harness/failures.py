"""A run that failed, and the record of it a report prints and the archive keeps.

A unit whose training raised leaves ``FAILED.txt`` (its traceback) in its ``.partial``
folder (``harness.runner``), beside ``checkpoint-rows.jsonl``: the per-round metrics of the
rounds up to its last checkpoint (``engine.checkpoint``). A failure is a result too (PFA
whose public rows carry their group's whole noise diverges until its subspace cannot be
computed), so a report lists such a run as *failed*, with the error's last line and the
rounds it kept, never as merely missing; and ``report --archive`` keeps the record beside
the archived runs as ``<method>-seed<n>.failed/`` (``failure.json``: the run fingerprint,
the error, the rounds kept; ``rows.jsonl``: those rounds' metrics), so that a fresh clone's
report says the same. A record whose fingerprint is not the unit's (the config changed
since) is ignored. A failure record is not a finished run: nothing reuses or counts it.
Every file here is read only when it is a regular file (``atomic.regular_file``): a FIFO in
its place would block the report forever.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import List, Optional

from ..atomic import regular_file

FAILED = "FAILED.txt"             # the traceback, in the unit's .partial folder
RECORD = "failure.json"           # in an archived failure record
ROWS = "rows.jsonl"               # the kept rounds' metrics, in an archived failure record
SUFFIX = ".failed"                # <run folder name> + SUFFIX: an archived failure record


def _rows(path: Path) -> List[dict]:
    """The metrics rows of a rows file that parse (a line cut by a kill ends the list)."""
    rows = []
    try:
        lines = regular_file(path).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return rows
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            break
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _failed_in_round(partial: Path) -> Optional[int]:
    """The round that raised: one past the heartbeat's last finished round
    (``engine.checkpoint.write_heartbeat``), or None when no heartbeat was written or it is
    unreadable."""
    from ..engine.checkpoint import read_heartbeat
    done = (read_heartbeat(partial) or {}).get("rounds_done")
    return done + 1 if isinstance(done, int) and not isinstance(done, bool) else None


def failure_of_partial(unit) -> Optional[dict]:
    """{"fingerprint", "error", "failed_in_round", "rounds_kept", "rows"} of a unit whose
    ``.partial`` folder holds ``FAILED.txt``, else None. ``error``: the traceback's last line;
    ``failed_in_round``: None when the run raised before its first round's heartbeat."""
    from ..engine.checkpoint import ROWS as CHECKPOINT_ROWS
    from ..engine.fingerprint import run_fingerprint
    partial = unit.partial
    try:
        text = regular_file(partial / FAILED).read_text(errors="replace")
    except OSError:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    rows = _rows(partial / CHECKPOINT_ROWS)
    return {"fingerprint": run_fingerprint(unit.cfg, unit.method),
            "error": lines[-1] if lines else "(FAILED.txt is empty)",
            "failed_in_round": _failed_in_round(partial),
            "rounds_kept": len(rows), "rows": rows}


def archived_failure(unit, dest: Path) -> Optional[dict]:
    """The failure record archived for ``unit`` at ``dest`` + :data:`SUFFIX` when it was made
    with the unit's config, else None."""
    from ..engine.fingerprint import run_fingerprint
    folder = dest.with_name(dest.name + SUFFIX)
    try:
        record = json.loads(regular_file(folder / RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or \
            record.get("fingerprint") != run_fingerprint(unit.cfg, unit.method):
        return None
    return dict(record, rows=_rows(folder / ROWS))


def _readable(error: str) -> str:
    """The error line without TensorFlow's op decoration (``{{function_node ...}}`` and a
    trailing empty ``name:``), which says nothing about the run."""
    error = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", error)
    return re.sub(r"\s*name:\s*$", "", error)


def describe(label: str, failure: dict, metric: str = "test_accuracy") -> str:
    """One line: the run, its error, the round that raised (when known), the rounds kept and
    the last accuracy among them."""
    rows = failure.get("rows") or []
    last = [r for r in rows if isinstance(r.get(metric), (int, float))]
    kept = int(failure.get("rounds_kept", len(rows)))
    where = (f" in round {failure['failed_in_round']}"
             if failure.get("failed_in_round") is not None else "")
    tail = (f"; {kept} rounds kept, {metric} {100.0 * last[-1][metric]:.2f}% at round "
            f"{last[-1].get('round', len(last))}" if last else f"; {kept} rounds kept")
    return f"{label}: {_readable(failure['error'])}{where}{tail}"


def write_record(failure: dict, dest: Path) -> Path:
    """Write ``failure`` (:func:`failure_of_partial`) as ``dest`` + :data:`SUFFIX`, replacing
    an older record; returns the folder."""
    folder = dest.with_name(dest.name + SUFFIX)
    tmp = folder.with_name(folder.name + ".archiving")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    record = {k: v for k, v in failure.items() if k != "rows"}
    (tmp / RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    (tmp / ROWS).write_text("".join(json.dumps(r, sort_keys=True) + "\n"
                                    for r in failure.get("rows") or []))
    if folder.exists():
        shutil.rmtree(folder)
    os.replace(tmp, folder)
    return folder
