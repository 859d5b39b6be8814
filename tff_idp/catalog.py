"""``python -m tff_idp.run --list``: what there is to run here. The configs under ``runs/``
with their titles, the methods with one line each, and the data sets with whether each can
be read on this machine (nothing is loaded: files are looked for)."""
from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path
from typing import List, Tuple

from . import toml_text


def config_files(runs_dir: str = "runs") -> List[Path]:
    """Every run and table config under ``runs_dir`` (reports' folders skipped, and
    ``status.toml``, the README status table's rows: ``report.status``)."""
    root = Path(runs_dir)
    return sorted(p for p in root.rglob("*.toml")
                  if not any("report" in part for part in p.relative_to(root).parts[:-1])
                  and p != root / "status.toml")


def config_titles(runs_dir: Path) -> List[Tuple[str, str, str, str]]:
    """(path, kind, title, parts) of every config under ``runs_dir``: a table's ``[table]
    title`` and the labels that choose part of it (``--only`` its data sets, ``--axis`` its
    swept key's values), or an experiment config's first comment sentence and ""."""
    out = []
    for path in config_files(str(runs_dir)):
        text = path.read_text()
        try:
            raw = toml_text.loads(text)
        except (tomllib.TOMLDecodeError, RecursionError):
            out.append((str(path), "?", "malformed TOML", ""))
            continue
        table = raw.get("table")
        if table is not None:
            out.append((str(path), "table", str(table.get("title", "")), _parts(raw)))
            continue
        comment = " ".join(line.lstrip("# ").strip() for line in text.splitlines()
                           if line.startswith("#"))
        out.append((str(path), "run", comment.split(". ")[0].rstrip("."), ""))
    return out


def _parts(raw: dict) -> str:
    """"--only: A | B; --axis: x | y" of a table's raw TOML (what is there of it; a label
    may hold commas and spaces, hence the bars)."""
    parts = []
    datasets = raw.get("datasets")
    if isinstance(datasets, dict) and datasets:
        parts.append("--only: " + " | ".join(map(str, datasets)))
    axis = raw.get("axis")
    labels = axis.get("labels") if isinstance(axis, dict) else None
    if isinstance(labels, list) and labels:
        parts.append("--axis: " + " | ".join(map(str, labels)))
    return "; ".join(parts)


def data_set_states():
    """(name, state) of every real data set: "here" or "missing: <why>", looked for where a
    config with the default ``data_dir`` and ``data_root`` reads it."""
    from .experiment_config import ExperimentConfig
    from .data.sources import SOURCES, missing
    defaults = ExperimentConfig()
    out = []
    for name in sorted(n for n in SOURCES if ":" not in n):
        why = missing(name, data_dir=defaults.data_dir, root=defaults.data_root)
        out.append((name, "here" if why is None else "missing: " + why.split(": ", 1)[-1]))
    return out


def listing(runs_dir: Path, width: int = 100) -> str:
    from .methods import METHODS
    from .methods.registry import BROKEN_PLUGINS
    lines = [f"configs under {runs_dir}/ (python -m tff_idp.run CONFIG; a table also needs "
             "--scale smoke|laptop|paper, and --only / --axis choose part of it: "
             "comma-separated labels):"]
    for path, kind, title, parts in config_titles(runs_dir):
        lines.append(f"  {path}  [{kind}]")
        lines += textwrap.wrap(title, width, initial_indent=" " * 6,
                               subsequent_indent=" " * 6, max_lines=2, placeholder=" ...")
        lines += textwrap.wrap(parts, width, initial_indent=" " * 6,
                               subsequent_indent=" " * 8, max_lines=2, placeholder=" ...")
    lines += ["", "methods (--set 'methods=[\"NAME\", ...]'):"]
    for name, method in METHODS.items():
        lines.append(_row(f"  {name}", method.summary, 16, width))
    for name, why in BROKEN_PLUGINS.items():      # registered by a package, not usable
        lines.append(_row(f"  {name}", f"broken, not run: {why}", 16, width))
    lines += ["", "data sets (python -m tff_idp.data fetch NAME stages one; synthetic:NAME "
              "is a stand-in of NAME's shapes):"]
    for name, state in data_set_states():
        lines.append(_row(f"  {name}", state, 19, width))
    return "\n".join(lines)


def _row(left: str, right: str, col: int, width: int) -> str:
    """``left`` padded to ``col``, then ``right`` wrapped under itself."""
    if len(left) >= col:
        return left + "\n" + textwrap.fill(right, width, initial_indent=" " * col,
                                           subsequent_indent=" " * col)
    return textwrap.fill(right, width, initial_indent=left.ljust(col),
                         subsequent_indent=" " * col)
