"""Finished runs kept in the repository, so that a committed report can be regenerated and its
table resumed on another machine.

A paper-scale run costs hours, and its results folder lives under ``--output-dir``, which a
new machine (or a clean clone) does not have: without the runs, ``python -m tff_idp.report``
cannot redraw a committed report, and adding seeds to it means training the old ones again.
The archive is ``runs/archive/`` beside the configs: ``<table>/<scale>/<cell>/<method>-seed<n>/``
holding a complete run's folder as the harness wrote it (config.json with the run
fingerprint, metrics.csv, ledger.csv, summary.json, and since issue 75 server.csv and
observers.json; tens of kB, no checkpoint).

``python -m tff_idp.report CONFIG --scale S --archive`` copies the table's complete runs in;
``harness.reuse`` then finds them like any other run of the same fingerprint, so ``run``,
``report`` and ``slurm submit`` copy an archived run into the results folder instead of
training it (``REUSED.json`` names the archive folder). A unit that failed is archived as its
failure record (``harness.failures``), which reports print and nothing reuses.
"""
from __future__ import annotations

import filecmp
import os
import shutil
from pathlib import Path
from typing import List, Optional

ARCHIVE = "archive"
REUSED = "REUSED.json"            # in a copied run: where it was copied from (harness.reuse)


def archive_root(spec) -> Optional[Path]:
    """``<runs>/archive`` for a table config under a folder named ``runs`` (the repository's
    configs), else None: a config kept elsewhere has no archive."""
    for parent in Path(spec.path).resolve().parents:
        if parent.name == "runs":
            return parent / ARCHIVE
    return None


def _run_files(folder: Path) -> List[str]:
    """The run's own files: not ``REUSED.json``, which says where a copy came from on one
    machine."""
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != REUSED)


def _same_files(a: Path, b: Path) -> bool:
    names = _run_files(a)
    return names == _run_files(b) and all(filecmp.cmp(a / n, b / n, shallow=False)
                                          for n in names)


def archive_folder(spec, scale: str, unit, output_dir: Optional[str] = None) -> Optional[Path]:
    """Where ``unit``'s run is archived (``<archive>/<table>/<scale>/<cell>/<method>-seed<n>``),
    or None for a config with no archive."""
    root = archive_root(spec)
    if root is None:
        return None
    out = spec.out_root(scale, output_dir)
    return root / spec.name / out.name / Path(unit.folder).relative_to(out)


def archive_runs(spec, scale: str, units, output_dir: Optional[str] = None) -> List[Path]:
    """Copy every complete unit's folder into the archive (replacing an archived folder whose
    files differ, e.g. a stale run of an earlier config), and every failed unit's failure
    record (``harness.failures``); returns the folders written. A complete folder holds no
    checkpoint; every file but ``REUSED.json`` is copied."""
    from .failures import archived_failure, failure_of_partial, write_record
    from .table import unit_complete
    if archive_root(spec) is None:
        return []
    written = []
    for u in units:
        dest = archive_folder(spec, scale, u, output_dir)
        if not unit_complete(u):
            failure = failure_of_partial(u)
            if failure is not None and archived_failure(u, dest) != failure:
                written.append(write_record(failure, dest))
            continue
        if dest.is_dir() and _same_files(Path(u.folder), dest):
            continue
        tmp = dest.with_name(dest.name + ".archiving")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name in _run_files(Path(u.folder)):
            shutil.copy2(Path(u.folder) / name, tmp / name)
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
        written.append(dest)
    return written


def failed_runs(spec, scale: str, incomplete, output_dir: Optional[str] = None) -> dict:
    """{unit label: failure (``harness.failures``)} of the ``incomplete`` units (the caller
    has checked that none is complete) that failed: from the unit's ``.partial`` folder, else
    from its archived failure record."""
    from .failures import archived_failure, failure_of_partial
    out = {}
    for u in incomplete:
        failure = failure_of_partial(u)
        dest = archive_folder(spec, scale, u, output_dir) if failure is None else None
        if dest is not None:
            failure = archived_failure(u, dest)
        if failure is not None:
            out[u.label] = failure
    return out
