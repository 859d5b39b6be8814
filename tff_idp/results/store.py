"""Results folders, written atomically.

A run writes into ``<dir>.partial/`` and renames it to ``<dir>/`` once everything is on disk,
so a folder without the suffix is always complete; each file is itself written to a temporary
name and moved into place.
"""
from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Iterable, List

from ..atomic import AtomicFolder, atomic_write_text


def _jsonable(x):
    if isinstance(x, float) and (math.isinf(x) or math.isnan(x)):
        return str(x)
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item"):
        return _jsonable(x.item())
    return x


def write_json(path: Path, obj) -> None:
    atomic_write_text(path, json.dumps(_jsonable(obj), indent=2, sort_keys=False) + "\n")


def write_csv(path: Path, rows: List[dict]) -> None:
    buf = io.StringIO()
    if rows:        # every key of every row (rounds without an evaluation lack its columns)
        fields = list(dict.fromkeys(k for row in rows for k in row))
        writer = csv.DictWriter(buf, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    atomic_write_text(path, buf.getvalue())


RunFolder = AtomicFolder


def is_complete(path: Path) -> bool:
    return (Path(path) / "summary.json").is_file()


def format_table(rows: Iterable[dict], columns: List[str]) -> str:
    rows = list(rows)
    cells = [[str(r.get(c, "")) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(out)
