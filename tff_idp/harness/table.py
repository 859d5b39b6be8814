"""A paper table as a config: the grid, the seeds, the paper's hyperparameters and its numbers.

A table file is TOML with a ``[table]`` section::

    [table]
    name = "gdpfed-table2"            # results go to <output_dir>/<name>/<scale>/
    title = "..."                     # the paper's caption
    source = "GDPFed (000) Table II"
    kind = "train"                    # "train" (runs), "noise" (sigma^2 and Lambda, no
                                      # training), "rates" (Problem-1 rates, no training) or
                                      # "bounds" (MS-PAFL's closed forms, harness.bounds)
    layout = "method x dataset"       # rows x columns of the rendered table, one of LAYOUTS
    methods = ["p_fedavg", ...]
    seeds = 3                         # seeds first_seed .. first_seed + seeds - 1
    first_seed = 0                    # optional: more seeds of a table run before
    figures = ["convergence"]         # optional: "convergence", "rates"

    [base]                            # config keys shared by every cell (ExperimentConfig)
    [datasets.FMNIST]                 # one block per data set: its keys (paper's Table I)
    [axis]                            # optional swept key: key, labels, values, mode,
                                      # panels (the convergence figure's: {title = [labels]})
    [reference.FMNIST]                # the paper's numbers: method = value, or with an axis
                                      # [reference.FMNIST.dp_fedavg] "label" = value

``axis.mode = "scale"`` multiplies the cell's own value (a number or each entry of a list:
Tables VI and VII scale C and the budgets); ``"set"`` replaces it. ``axis.key = "*"`` makes
every value a table of config keys set together (paper 004's privacy distributions change
budgets, ratios and, for the non-private column, ``methods``; a key given as a table of
data-set labels, e.g. ``budgets = { FEMNIST = [1.0], SVHN = [10.0] }``, differs per data set). Every cell x method x
seed is a *unit*: one run, one results folder. ``--scale`` shrinks every unit consistently
(see :data:`SCALES`).
"""
from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .. import toml_text
from ..config import PLACEMENT_KEYS, ConfigError, check_name, read_toml
from ..experiment_config import (ExperimentConfig, check_values, from_mapping, parse_override,
                                 validate)
from ..errors import fail as _fail
from .scales import SCALES, require_scale, scale_values  # noqa: F401 (importers take them here)

LAYOUTS = ("method x dataset", "dataset/method x axis", "method x axis", "axis x dataset",
           "dataset/method x value")
KINDS = ("train", "noise", "rates", "bounds")
TABLE_KEYS = {"name", "title", "source", "kind", "layout", "methods", "seeds", "first_seed",
              "figures", "notes", "rates_sweep"}
@dataclasses.dataclass
class Axis:
    key: str
    labels: List[str]
    values: list
    mode: str = "set"
    # the convergence figure's panels of a data set: {panel title: [axis labels]} (None: one
    # panel with every column), e.g. a paper figure's (a) and (b) side by side
    panels: Optional[Dict[str, List[str]]] = None


AXIS_KEYS = ("key", "labels", "values", "mode", "panels")     # what an [axis] may hold


@dataclasses.dataclass(frozen=True)
class Unit:
    """One run: a cell (data set label, axis label) x method x seed."""
    table: str
    dataset: str
    column: Optional[str]
    method: str
    seed: int
    cfg: ExperimentConfig
    folder: Path

    @property
    def label(self) -> str:
        return "/".join(x for x in (self.dataset, self.column, self.method, f"seed{self.seed}")
                        if x)

    @property
    def partial(self) -> Path:
        """The folder the run trains in until it completes (``atomic``: renamed to
        :attr:`folder` then): its checkpoint, heartbeat, lock-guarded state."""
        return self.folder.with_name(self.folder.name + ".partial")


@dataclasses.dataclass
class TableSpec:
    path: Path
    name: str
    title: str
    source: str
    kind: str
    layout: str
    methods: List[str]
    seeds: int
    figures: List[str]
    base: dict
    datasets: Dict[str, dict]
    axis: Optional[Axis]
    reference: dict
    notes: str = ""
    rates_sweep: Optional[dict] = None
    first_seed: int = 0                  # the seeds are first_seed .. first_seed + seeds - 1
    bounds: Optional[object] = None       # kind "bounds": harness.bounds.BoundsSpec
    # --set key=value items (and --backend/--device) applied to every unit after the scale
    overrides: List[str] = dataclasses.field(default_factory=list)
    # [[claims]]: the paper's claims about the methods' order, checked by the report
    claims: List[object] = dataclasses.field(default_factory=list)
    # --seeds: only these of the table's seeds (None: all)
    seed_subset: Optional[Tuple[int, ...]] = None
    # --methods: only these methods in every cell, also where a column names its own
    method_subset: Optional[Tuple[str, ...]] = None

    def cell_values(self, dataset: str, column: Optional[int]) -> dict:
        v = dict(self.base)
        v.update(self.datasets[dataset])
        if self.axis is not None and column is not None:
            a = self.axis
            value = a.values[column]
            if a.key == "*":
                # a key whose value is a table of data-set labels differs per data set
                for k, x in value.items():
                    if isinstance(x, dict) and dataset not in x:
                        _fail(f"axis.values.{k}", x, f"has no value for data set {dataset!r}")
                    v[k] = x[dataset] if isinstance(x, dict) else x
                return v
            if a.mode == "scale":
                cur = v.get(a.key, getattr(ExperimentConfig(), a.key))
                value = [x * value for x in cur] if isinstance(cur, list) else cur * value
            v[a.key] = value
        return v

    def methods_of(self, dataset: str, column: Optional[str]) -> List[str]:
        """The methods run in a cell (an axis value may set its own ``methods``)."""
        if self.axis is not None and column is not None and self.axis.key == "*":
            value = self.axis.values[self.axis.labels.index(column)]
            return value.get("methods", self.methods)
        return self.methods

    def all_methods(self) -> List[str]:
        """The table's methods and, after them, any a column names of its own."""
        found = list(self.methods)
        for label in (self.axis.labels if self.axis is not None else []):
            found += [m for m in self.methods_of("", label) if m not in found]
        return found

    def columns(self) -> List[Optional[int]]:
        return list(range(len(self.axis.labels))) if self.axis is not None else [None]

    def computing_overrides(self) -> List[str]:
        """The ``--set`` items that change what the runs compute: not those of
        ``config.PLACEMENT_KEYS`` (device, chunk size, checkpoint interval, data folders)."""
        return [item for item in self.overrides if parse_override(item)[0] not in PLACEMENT_KEYS]

    def out_root(self, scale: str, output_dir: Optional[str] = None) -> Path:
        """<output_dir>/<table>/<scale>, or <scale>+<overrides> for a run with --set items
        that change the computation: such runs never share folders (or reports) with the
        table as written; ``--device gpu`` or ``--set fast_chunk_size=4`` alone train into
        (and resume) the table's own folders."""
        return Path(output_dir or self.base.get("output_dir", "results")) / self.name / (
            scale + override_suffix(self.computing_overrides()))

    def reference_value(self, dataset: str, method: str, column: Optional[str]):
        ref = self.reference.get(dataset, {})
        r = ref.get(method)
        if isinstance(r, dict):
            return r.get(column) if column is not None else r
        return r


def override_suffix(overrides: List[str]) -> str:
    """"" or "+key=value,..." (a readable slug; a long one is cut and hashed)."""
    if not overrides:
        return ""
    import hashlib
    text = folder_name(",".join(overrides))
    if len(text) > 60:
        text = text[:50] + "-" + hashlib.sha256(",".join(overrides).encode()).hexdigest()[:8]
    return "+" + text


def with_overrides(spec: TableSpec, overrides: List[str]) -> TableSpec:
    """The table with ``--set`` items applied to every unit (each checked here: a bad key or
    value is a one-line ConfigError before any work)."""
    for item in overrides:
        key, _ = parse_override(item)
        if key in ("methods", "method", "seed", "name", "output_dir"):
            _fail("--set", item, "not for a table: its methods are chosen with --methods, its "
                  "seeds and name by the table, its results folder by --output-dir")
    return dataclasses.replace(spec, overrides=list(spec.overrides) + list(overrides))


def only_datasets(spec: TableSpec, only: Optional[str]) -> TableSpec:
    """The table restricted to the data-set labels in ``only`` (comma-separated, e.g.
    ``"FMNIST"``); ``None`` keeps them all. An unknown label is a one-line ConfigError."""
    if only is None:
        return spec
    labels, unknown = split_labels(only, list(spec.datasets))  # --only fmnist means FMNIST
    if unknown is not None or not labels:
        _fail("--only", unknown or only, f"no such data set in {spec.name}; choose from "
              f"{', '.join(spec.datasets)}")
    return dataclasses.replace(spec, datasets={k: v for k, v in spec.datasets.items()
                                               if k in labels})


def split_labels(text: str, labels: List[str]) -> Tuple[List[str], Optional[str]]:
    """(the labels named in ``text``, the first piece that starts none or None): ``text``
    comma-separated and in any case, where a label may hold commas itself ("GDPFed, omega
    on group means (normalized)"): at each place the longest run of comma-separated pieces
    that is a label is taken."""
    by_case = {x.lower(): x for x in labels}
    parts, out, i = text.split(","), [], 0
    while i < len(parts):
        if not parts[i].strip():
            i += 1
            continue
        j = next((j for j in range(len(parts), i, -1)
                  if ",".join(parts[i:j]).strip().lower() in by_case), None)
        if j is None:
            return out, parts[i].strip()
        out.append(by_case[",".join(parts[i:j]).strip().lower()])
        i = j
    return out, None


def only_axis(spec: TableSpec, labels: Optional[str]) -> TableSpec:
    """The table restricted to the labels in ``labels`` of its ``[axis]`` (comma-separated,
    e.g. ``"0.5x,1.0x"`` or ``"54-37-9"``; any case), in the table's order: the axis keeps
    those values alone (a figure panel keeps its chosen labels; one with none is dropped),
    and every unit keeps its whole table's folder. ``None`` keeps them all; an unknown label,
    or any label for a table without an axis, is a one-line ConfigError."""
    if labels is None:
        return spec
    a = spec.axis
    if a is None:
        _fail("--axis", labels, f"{spec.name} has no [axis]; its cells are chosen with --only "
              "(data sets) and --methods")
    chosen, unknown = split_labels(labels, a.labels)
    if unknown is not None or not chosen:
        _fail("--axis", unknown or labels, f"not a label of {spec.name}'s [axis]; choose from "
              f"{' | '.join(a.labels)}")
    keep = [i for i, label in enumerate(a.labels) if label in chosen]
    panels = None
    if a.panels is not None:
        panels = {title: [x for x in labs if x in chosen] for title, labs in a.panels.items()}
        panels = {title: labs for title, labs in panels.items() if labs} or None
    axis = dataclasses.replace(a, labels=[a.labels[i] for i in keep],
                               values=[a.values[i] for i in keep], panels=panels)
    return dataclasses.replace(spec, axis=axis)


def only_methods(spec: TableSpec, methods: Optional[str]) -> TableSpec:
    """The table restricted to the methods in ``methods`` (comma-separated registry keys,
    e.g. ``"gdpfed_plus,dp_fedavg"``, run in that order); ``None`` keeps them all. A method
    the table does not have is a one-line ConfigError."""
    if methods is None:
        return spec
    names = list(dict.fromkeys(x.strip() for x in methods.split(",") if x.strip()))
    known = spec.all_methods()
    for name in names or [methods]:
        if name not in known:
            _fail("--methods", name, f"not a method of {spec.name}; choose from "
                  f"{', '.join(known)}")
    return dataclasses.replace(spec, methods=names, method_subset=tuple(names))


def only_seeds(spec: TableSpec, seeds: Optional[str]) -> TableSpec:
    """The table restricted to the seeds in ``seeds`` (comma-separated integers, e.g. ``"0"``
    to run seed 0 of every cell before the others); ``None`` keeps them all. A seed outside
    the table's is a one-line ConfigError."""
    if seeds is None:
        return spec
    table_seeds = range(spec.first_seed, spec.first_seed + spec.seeds)
    chosen = []
    for item in [x.strip() for x in seeds.split(",")] or [seeds]:
        if not item.isdigit() or int(item) not in table_seeds:
            _fail("--seeds", item, f"not a seed of {spec.name}; its seeds are "
                  f"{table_seeds.start}..{table_seeds.stop - 1}")
        if int(item) in chosen:
            _fail("--seeds", seeds, f"seed {item} given twice")
        chosen.append(int(item))
    return dataclasses.replace(spec, seed_subset=tuple(chosen))


def check_selected(spec: TableSpec, units: List[Unit],
                   chosen: Dict[str, Optional[str]]) -> None:
    """A one-line ConfigError when the flags in ``chosen`` ({"--axis": "0-0-0", ...}, None
    where not given) leave no unit of the table: e.g. a method with a column that does not
    run it (paper 004's non-private column runs P-FedAvg alone)."""
    given = {flag: value for flag, value in chosen.items() if value is not None}
    if given and not units:
        flags = " ".join(f"{flag}={value!r}" for flag, value in given.items())
        raise ConfigError(f"{flags}: together select no run of {spec.name} (a column may run "
                          "its own methods: the config's [axis] values)")


def is_table(path: str) -> bool:
    if not Path(path).is_file():      # a FIFO would block; the config check says why
        return False
    try:
        text = Path(path).read_text()
        return "table" in toml_text.loads(text)
    except RecursionError:          # too deep to parse: what its headers say it is (its
        # reader then refuses it in one line)
        return re.search(r"^\s*\[table\]", text, re.MULTILINE) is not None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False


MAX_SEEDS = 1000           # seeds a table may list (each seed is every cell's run again)


def _finite_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def check_schema(raw: dict) -> None:
    """The type of every section and [table] key of a table config, before anything reads
    them (a wrong type is a one-line ConfigError naming the key, never a traceback)."""
    for section in ("table", "base", "datasets", "axis", "reference", "bounds"):
        if section in raw and not isinstance(raw[section], dict):
            _fail(section, raw[section], f"must be a [{section}] section (a table of keys)")
    if "claims" in raw and not (isinstance(raw["claims"], list) and
                                all(isinstance(c, dict) for c in raw["claims"])):
        _fail("claims", raw["claims"], "must be [[claims]] blocks")
    t = raw["table"]
    for key, kind, what in (("title", str, "a string"), ("source", str, "a string"),
                            ("notes", str, "a string"), ("rates_sweep", dict, "a table")):
        if key in t and not isinstance(t[key], kind):
            _fail(f"table.{key}", t[key], f"must be {what}")
    for key in ("methods", "figures"):
        if key in t and not (isinstance(t[key], list) and
                             all(isinstance(x, str) for x in t[key])):
            _fail(f"table.{key}", t[key], 'must be a list of names, e.g. ["gdpfed_plus"]')
    from ..methods import METHODS
    for i, name in enumerate(t.get("methods") or []):
        if name not in METHODS:
            _fail("table.methods", name, f"not a registered method; choose from "
                  f"{', '.join(sorted(METHODS))}")
        if name in t["methods"][:i]:                  # would train every unit twice
            _fail("table.methods", t["methods"], f"names {name!r} twice")
    seeds = t.get("seeds", 3)
    if not isinstance(seeds, bool) and isinstance(seeds, int) and seeds > MAX_SEEDS:
        _fail("table.seeds", seeds, f"at most {MAX_SEEDS:,} seeds (every seed is a run of "
              "every cell)")
    for ds, block in (raw.get("datasets") or {}).items():
        if not isinstance(block, dict):
            _fail(f"datasets.{ds}", block, "must be a table of config keys")
    for ds, methods in (raw.get("reference") or {}).items():
        if not isinstance(methods, dict):
            _fail(f"reference.{ds}", methods, "must be a table {method = paper value}")
        for method, value in methods.items():
            values = value.values() if isinstance(value, dict) else [value]
            for v in values:
                items = v if isinstance(v, list) else [v]
                if not items or not all(_finite_number(x) for x in items):
                    _fail(f"reference.{ds}.{method}", value, "must be a finite number (or a "
                          "list of them, or a table of them by axis label)")


# config keys the harness sets for every unit (expand): a [base] or [datasets.X] value of
# one of them would be silently replaced, so it is refused
HARNESS_KEYS = ("seed", "name", "methods")


def load_table(path: str) -> TableSpec:
    p = Path(path)
    raw = read_toml(path)
    unknown = set(raw) - {"table", "base", "datasets", "axis", "reference", "bounds", "claims"}
    if unknown:
        _fail(sorted(unknown)[0], "...", "unknown section; a table has [table], [base], "
              "[datasets.X], [axis], [reference.X], [bounds], [[claims]]")
    check_schema(raw)
    t = raw["table"]
    for k in t:
        if k not in TABLE_KEYS:
            _fail(f"table.{k}", t[k], f"unknown key; valid: {', '.join(sorted(TABLE_KEYS))}")
    for k in ("name", "title", "kind", "layout"):
        if not isinstance(t.get(k), str) or not t[k]:
            _fail(f"table.{k}", t.get(k), "must be a non-empty string")
    check_name("table.name", t["name"])
    if t["kind"] not in KINDS:
        _fail("table.kind", t["kind"], f"must be one of {', '.join(KINDS)}")
    if t["layout"] not in LAYOUTS:
        _fail("table.layout", t["layout"], f"must be one of {', '.join(LAYOUTS)}")
    seeds = t.get("seeds", 3)
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds <= 0:
        _fail("table.seeds", seeds, "must be a positive number of seeds")
    first_seed = t.get("first_seed", 0)
    if isinstance(first_seed, bool) or not isinstance(first_seed, int) or first_seed < 0:
        _fail("table.first_seed", first_seed, "must be a non-negative integer")
    methods = t.get("methods")
    if not isinstance(methods, list) or not methods:
        _fail("table.methods", methods, "the grid is empty: list at least one method")
    datasets = raw.get("datasets") or {}
    if not datasets:
        _fail("datasets", datasets, "the grid is empty: add at least one [datasets.X] block")
    axis = None
    if "axis" in raw:
        a = raw["axis"]
        if set(a) - set(AXIS_KEYS):
            _fail("axis", sorted(set(a) - set(AXIS_KEYS))[0],
                  f"unknown key; valid: {', '.join(AXIS_KEYS)}")
        keys = {f.name for f in dataclasses.fields(ExperimentConfig)}
        if a.get("key") != "*" and a.get("key") not in keys:
            _fail("axis.key", a.get("key"), "is not a config key (or '*')")
        if a.get("key") == "*" and not all(isinstance(x, dict) for x in a.get("values") or []):
            _fail("axis.values", a.get("values"), "with key='*' every value is a table of keys")
        labels, values = a.get("labels"), a.get("values")
        if not isinstance(values, list) or not values:
            _fail("axis.values", values, "the grid is empty: give at least one value")
        labels = labels if labels is not None else [str(x) for x in values]
        if len(labels) != len(values):
            _fail("axis.labels", labels, f"needs {len(values)} labels, one per value")
        if a.get("mode", "set") not in ("set", "scale"):
            _fail("axis.mode", a.get("mode"), "must be 'set' or 'scale'")
        labels = [str(x) for x in labels]
        panels = a.get("panels")
        if panels is not None:
            if not isinstance(panels, dict) or not panels or not all(
                    isinstance(v, list) and v for v in panels.values()):
                _fail("axis.panels", panels, "must be a table {panel title = [axis labels]}")
            panels = {str(k): [str(x) for x in v] for k, v in panels.items()}
            for title, members in panels.items():
                for lab in members:
                    if lab not in labels:
                        _fail(f"axis.panels.{title}", lab, "is not one of the axis labels")
        axis = Axis(a["key"], labels, values, a.get("mode", "set"), panels)
    figures = t.get("figures", [])
    for f in figures:
        if f not in ("convergence", "rates"):
            _fail("table.figures", f, "must be 'convergence' or 'rates'")
    run_methods = set(methods) | {m for v in (axis.values if axis else [])
                                  if isinstance(v, dict) for m in v.get("methods", [])}
    for ds, refs in raw.get("reference", {}).items():
        if ds not in datasets:
            _fail("reference", ds, f"is not one of the data sets {sorted(datasets)}")
        for method in refs:                  # a paper number no cell of ours would face
            if method not in run_methods:
                _fail(f"reference.{ds}.{method}", refs[method], "names a method the table "
                      f"does not run ({', '.join(sorted(run_methods))})")
    for key in HARNESS_KEYS:                 # set per unit by the harness: never read
        for where, block in [("base", raw.get("base", {}))] + [
                (f"datasets.{ds}", b) for ds, b in datasets.items()]:
            if key in block:
                _fail(f"{where}.{key}", block[key], "is set by the harness for every unit "
                      "(from table.seeds / table.first_seed, table.name, table.methods or an "
                      "axis value's methods); remove it")
    spec = TableSpec(p, t["name"], t["title"], t.get("source", ""), t["kind"], t["layout"],
                     methods, seeds, figures, raw.get("base", {}), datasets, axis,
                     raw.get("reference", {}), t.get("notes", ""), t.get("rates_sweep"),
                     first_seed)
    if "axis" in spec.layout and axis is None:
        _fail("table.layout", spec.layout, "needs an [axis]")
    check_cell_types(spec)
    if (spec.kind == "bounds") != ("bounds" in raw):
        _fail("bounds", spec.kind, "a [bounds] section goes with kind = 'bounds' and only")
    if spec.kind == "bounds":
        from .bounds import parse
        spec = dataclasses.replace(spec, bounds=parse(raw["bounds"]))
    if "claims" in raw:
        from . import claims
        if spec.kind != "train":
            _fail("claims", spec.kind, "claims are checked on trained runs: kind = 'train'")
        spec = dataclasses.replace(spec, claims=claims.parse(
            raw["claims"], list(datasets), axis.labels if axis else [], sorted(run_methods),
            _fail))
    return spec


def check_cell_types(spec: TableSpec) -> None:
    """Every config value of the table typed, finite and in range before the scale reads it
    (:func:`tff_idp.experiment_config.check_values`): [base], each [datasets.X] block and axis value,
    then every cell, each error one line naming where the key is."""
    blocks = [("base", spec.base)] + [(f"datasets.{ds}", b) for ds, b in spec.datasets.items()]
    if spec.axis is not None and spec.axis.key == "*":
        blocks += [(f"axis.values.{label}", v) for label, v in zip(spec.axis.labels,
                                                                    spec.axis.values)]
    for where, block in blocks:
        if "reference" in block:             # expand drops it: never compared
            _fail(f"{where}.reference", block["reference"], "a table's paper numbers go in "
                  "[reference.<data set>.<method>]")
        per_dataset = where.startswith("axis")   # an axis value's table by data set: per cell
        try:
            check_values({k: x for k, x in block.items()
                          if not (per_dataset and isinstance(x, dict))})
        except ConfigError as e:
            raise ConfigError(f"[{where}] {e}") from None
    a = spec.axis
    if a is not None and a.mode == "scale" and not all(_finite_number(x) for x in a.values):
        _fail("axis.values", a.values, "with mode='scale' every value is a finite factor")
    for ds in spec.datasets:
        for col in spec.columns():
            label = a.labels[col] if col is not None else None
            try:
                check_values(spec.cell_values(ds, col))
            except ConfigError as e:
                raise ConfigError(f"[{ds}{'/' + label if label else ''}] {e}") from None


def check_data(units: List[Unit]) -> None:
    """A one-line ConfigError for the first data set the table needs that is not here."""
    from ..data.sources import missing
    seen = set()
    for u in units:
        c = u.cfg
        key = (c.dataset, c.data_dir, c.allow_download, c.data_root)
        if key in seen:
            continue
        seen.add(key)
        why = missing(c.dataset, c.data_dir, c.allow_download, c.data_root)
        if why:
            raise ConfigError(f"[{u.dataset}] {why}")


def expand(spec: TableSpec, scale: str, output_dir: Optional[str] = None) -> List[Unit]:
    """Every unit of the table at ``scale``, each config validated (a bad cell is a one-line
    error naming the cell)."""
    if scale not in SCALES:
        _fail("--scale", scale, f"no such scale; choose from {', '.join(SCALES)}")
    s = SCALES[scale]
    at_scale = range(spec.first_seed,
                     spec.first_seed + min(spec.seeds, s.get("seeds") or spec.seeds))
    for seed in spec.seed_subset or ():
        if seed not in at_scale:            # e.g. --seeds 1 at smoke scale (one seed)
            _fail("--seeds", seed, f"not a seed of {spec.name} at scale {scale}; there its "
                  f"seeds are {at_scale.start}..{at_scale.stop - 1}")
    seeds = [seed for seed in at_scale if spec.seed_subset is None or seed in spec.seed_subset]
    root = spec.out_root(scale, output_dir)
    units = []
    for ds in spec.datasets:
        for col in spec.columns():
            label = spec.axis.labels[col] if col is not None else None
            values = spec.cell_values(ds, col)
            values.pop("reference", None)
            # the scale reads the cell's methods (their phases decide what is capped)
            values.setdefault("methods", spec.methods_of(ds, label))
            values = scale_values(values, scale)
            if spec.overrides:                   # --set: after the scale, on every unit
                values.update(parse_override(item) for item in spec.overrides)
            folder_cell = root / folder_name(ds) / (folder_name(label) if label is not None
                                                    else "")
            for method in values.pop("methods", spec.methods):
                if spec.method_subset is not None and method not in spec.method_subset:
                    continue                     # --methods: a column's own methods too
                for seed in seeds:
                    v = dict(values, methods=[method], seed=seed,
                             name=folder_name(f"{spec.name}-{scale}-{ds}-{label or ''}"))
                    if output_dir is not None:
                        v["output_dir"] = output_dir
                    try:
                        cfg = validate(from_mapping(v))
                    except ConfigError as e:
                        raise ConfigError(f"[{ds}{'/' + label if label else ''}] {e}") from e
                    units.append(Unit(spec.name, ds, label, method, seed, cfg,
                                      folder_cell / f"{method}-seed{seed}"))
    return units


def unit_complete(unit: Unit) -> bool:
    """Its folder is complete, every file parses, metrics.csv has every round, and it was
    made with this unit's config (a folder left by an earlier, different definition of the
    cell, e.g. another scale setting, is stale; ``engine.finished_runs.complete_run``)."""
    from ..engine.finished_runs import complete_run
    from ..results import is_complete
    if not is_complete(unit.folder):
        return False
    return complete_run(unit.folder, unit.cfg, unit.method) is not None


def folder_name(text: str) -> str:
    """A data-set label, a column label or a change as a folder name ("FMNIST s=5" ->
    "FMNIST_s_5")."""
    text = re.sub(r"[^A-Za-z0-9_.+-]+", "_", str(text)).strip("_")
    return text or "_"
