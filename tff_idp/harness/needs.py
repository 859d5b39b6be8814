"""The data sets configs read, for ``python -m tff_idp.data fetch TARGET ...``: a TARGET is
a data set's name, a run or table config (a table: every data set of every cell), or
``all`` (every config under ``runs/``). Each comes back as a :class:`~tff_idp.data.staging.Need`
(the data set and where its configs read it), which :mod:`tff_idp.data.staging` stages."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, List, Optional

from ..catalog import config_files
from ..config import ConfigError, read_toml
from ..experiment_config import ExperimentConfig
from ..data.sources import SOURCES
from ..data.staging import Need
from .table import is_table, load_table


def _defaults() -> Need:
    c = ExperimentConfig()
    return Need(c.dataset, c.data_dir, c.data_root)


def needs_of_config(path: str) -> List[Need]:
    """The data sets a run config or a table config reads (a table: every data set of
    every cell; stand-ins a smoke scale would use are not counted: a table's data are the
    real ones). A bad file is a one-line ConfigError."""
    base = _defaults()
    if not is_table(path):
        cells = [read_toml(path)]
    else:
        spec = load_table(path)
        cells = [spec.cell_values(ds, col) for ds in spec.datasets for col in spec.columns()]
    out = []
    for v in cells:
        need = Need(str(v.get("dataset", base.dataset)), str(v.get("data_dir", base.data_dir)),
                    str(v.get("data_root", base.data_root)))
        if need not in out:
            out.append(need)
    return out


def needs_of_targets(targets: Iterable[str], data_dir: Optional[str], data_root: str,
                     runs_dir: str = "runs") -> List[Need]:
    """What ``fetch`` stages for its arguments: data-set names (at ``data_dir`` /
    ``data_root``), config files, and ``all``. A target that is none of these is a one-line
    ConfigError (raised before anything is fetched)."""
    data_dir = data_dir or _defaults().data_dir
    out: List[Need] = []
    for t in targets:
        if t == "all":
            files = config_files(runs_dir)
            if not files:
                raise ConfigError(f"target='all': no config under {runs_dir}/ (run from the "
                                  "project folder, or pass --runs)")
            found = [n for f in files for n in needs_of_config(str(f))]
        elif t.endswith(".toml") or Path(t).is_file():
            found = needs_of_config(t)
        elif t in SOURCES:
            found = [Need(t, data_dir, data_root)]
        else:
            raise ConfigError(f"target={t!r}: not a data set, a config file or 'all'; data "
                              f"sets: {', '.join(sorted(n for n in SOURCES if ':' not in n))}")
        out.extend(n for n in found if n not in out)
    return out
