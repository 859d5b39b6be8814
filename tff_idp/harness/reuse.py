"""Runs that tables share: a unit whose exact run is already complete in another table's
folder under the same results root is copied from there instead of trained again.

GDPFed's tables hold Table II's setting as one of their columns (Table IV's 2:2:2, Table
VI's 1.0x, Table VII's 1.0x): the same config, method and seed, hence the same run. "The
same" is what decides whether a folder is complete at all: the run fingerprint
(``engine.fingerprint.run_fingerprint``: every config key that changes the computation, not the
table's name or where results go) and a complete, readable folder
(``engine.finished_runs.complete_run``). The copy carries ``REUSED.json`` naming its source.
Besides the results root, the repository's archive of finished runs is searched
(``harness.archive``: ``runs/archive/``), so a fresh clone copies archived runs too;
``--force`` trains a table whole.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Dict, List

from ..atomic import FolderLock, FolderLocked, regular_file
from .archive import REUSED, archive_root
from .table import Unit



def equal_runs(units: List[Unit], roots: List[Path]) -> Dict[str, Path]:
    """{unit label: a complete folder under one of ``roots`` (searched in order) made with the
    unit's fingerprint, an original rather than a copy} for the units that have no folder of
    their own (a stale folder is trained again)."""
    from ..engine.fingerprint import run_fingerprint
    from ..engine.finished_runs import complete_run
    wanted: Dict[str, List[Unit]] = {}
    for u in units:
        if not u.folder.exists():
            wanted.setdefault(run_fingerprint(u.cfg, u.method), []).append(u)
    found: Dict[str, Path] = {}
    if not wanted:
        return found
    # the first root's before the next's; in each, originals before copies (a copy's source
    # is named in its REUSED.json)
    made_files = [made for root in roots if root is not None and Path(root).is_dir()
                  for made in sorted(Path(root).glob("**/config.json"),
                                     key=lambda p: ((p.parent / REUSED).exists(), str(p)))]
    for made in made_files:
        folder = made.parent
        if folder.name.endswith((".partial", ".reusing")):
            continue
        try:
            fingerprint = json.loads(regular_file(made).read_text()).get("fingerprint")
        except (OSError, ValueError, AttributeError):
            continue
        for u in wanted.get(fingerprint, []):
            if u.label not in found and complete_run(folder, u.cfg, u.method) is not None:
                found[u.label] = folder
    return found


def adopt(unit: Unit, source: Path) -> bool:
    """Copy the complete run in ``source`` into ``unit.folder`` (atomically, under the unit's
    lock; its leftover ``.partial`` folder goes). False when another process holds the unit
    or its folder appeared meanwhile."""
    try:
        with FolderLock(unit.folder):
            if unit.folder.exists():
                return False
            tmp = unit.folder.with_name(unit.folder.name + ".reusing")
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(source, tmp)
            (tmp / REUSED).write_text(json.dumps({"from": str(Path(source).resolve())}) + "\n")
            os.replace(tmp, unit.folder)
            shutil.rmtree(unit.partial, ignore_errors=True)
            return True
    except FolderLocked:
        return False


def results_root(spec, scale: str, output_dir=None) -> Path:
    """The folder that holds every table's results: <root>/<table>/<scale>/..."""
    return spec.out_root(scale, output_dir).parent.parent


def search_roots(spec, scale: str, output_dir=None) -> List[Path]:
    """Where equal runs are looked for: the results root, then the archive (if any)."""
    roots = [results_root(spec, scale, output_dir)]
    archive = archive_root(spec)
    if archive is not None and archive.resolve() != roots[0].resolve():
        roots.append(archive)
    return roots


def still_to_train(spec, scale: str, units: List[Unit], output_dir=None) -> List[Unit]:
    """The missing ``units`` that no equal run under the results root or in the archive can
    stand in for."""
    found = equal_runs(units, search_roots(spec, scale, output_dir))
    return [u for u in units if u.label not in found]


def reuse_equal_runs(spec, scale: str, units: List[Unit], output_dir=None) -> int:
    """Adopt every missing unit's equal run found under the results root or in the archive;
    says how many (and from where) in one line on stderr. Returns the number adopted."""
    roots = search_roots(spec, scale, output_dir)
    found = equal_runs(units, roots)
    by_label = {u.label: u for u in units}
    done = [label for label, source in found.items() if adopt(by_label[label], source)]

    def where(folder: Path) -> str:
        root = next(r for r in roots if Path(folder).is_relative_to(r))
        name = Path(folder).relative_to(root).parts[0]
        return name if root == roots[0] else f"{name} (archived in {root})"

    if done:
        tables = sorted({where(found[label]) for label in done})
        what = "1 run copied from a complete run" if len(done) == 1 else \
            f"{len(done)} runs copied from complete runs"
        print(f"{spec.name}: {what} of the same config in {', '.join(tables)} (REUSED.json "
              "in each names its source)", file=sys.stderr)
    return len(done)
