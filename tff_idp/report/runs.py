"""A table's runs read back: results folders (``collect``, ``read_run``), the mean and
sample std over seeds, and ``curves.csv`` (each run's accuracy per round) written and read."""
from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Dict, List

import numpy as np

from ..atomic import regular_file
from ..config import ConfigError
from ..harness.table import TableSpec, Unit, unit_complete
from ..results.manifest import manifest_problem
from ..results.summary import RunSummary, fraction


def mean_std(values: List[float]):
    """(mean, sample std over seeds) of ``values``; (None, None) for none, std 0 for one."""
    if not values:
        return None, None
    v = np.asarray(values, float)
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def _read_json(path: Path) -> dict:
    import json
    return json.loads(regular_file(path).read_text())


def collect(units: List[Unit]) -> Dict[tuple, dict]:
    """{(dataset, column, method): {"acc": [...], "seconds": [...], "wall": [(set-up,
    evaluation) seconds, or None where the summary has no wall time], "notes": set, "curves":
    [[acc per round]], "missing": [labels], "flops": model FLOPs of the complete runs,
    "not_covered": reasons the ledger's epsilon does not bound a run's releases, "observers"
    and "plans": each private run's privacy record and plan (summary.json), "local_dp": the
    privacy records of record-level local-DP runs (MS-PAFL, LDP-FedAvg), "segments":
    [each complete run's segments: ``engine.segments``], "failed": 0 (the report counts the
    failed runs among the missing: ``harness.failures``)}} from the complete results folders."""
    from ..engine.segments import of_summary
    from ..harness import cost
    from ..results import is_complete
    cells: Dict[tuple, dict] = {}
    for u in units:
        c = cells.setdefault((u.dataset, u.column, u.method),
                             {"acc": [], "seconds": [], "wall": [], "notes": set(), "curves": [],
                              "missing": [], "flops": 0.0, "not_covered": set(),
                              "observers": [], "local_dp": [], "plans": [], "audits": [],
                              "unreadable": [],
                              "metric": "test_accuracy", "segments": [], "failed": 0})
        if not is_complete(u.folder):
            c["missing"].append(u.label)
            continue
        try:
            s, curve, second = read_run(u.folder)
        except UnreadableRun as e:           # listed, counted as missing, never printed
            c["unreadable"].append(str(e))
            c["missing"].append(u.label)
            continue
        if not unit_complete(u):             # made with another config: stale
            c["missing"].append(u.label)
            continue
        c["flops"] += cost.unit_cost(u.cfg)["flops"]
        c["acc"].append(100.0 * s.reported_accuracy)
        c.setdefault("seeds", []).append(u.seed)
        c["seconds"].append(float(s.seconds_total))
        c["segments"].append(of_summary(s))
        c["wall"].append((float(s.seconds_setup), float(s.seconds_eval))
                         if s.seconds_wall is not None else None)
        if s.data_note:
            c["notes"].add(s.data_note)
        if s.guarantee.get("valid") is False:
            c["not_covered"].add(s.guarantee.get("why_not_valid", "not covered by the ledger"))
        if s.groups:
            c["observers"].append(s.privacy)
            c["plans"].append(s.plan)
        elif "covering_epsilon_max" in (s.privacy or {}):     # MS-PAFL, LDP-FedAvg
            c["local_dp"].append(s.privacy)
        if s.audit:
            c["audits"].append((u.seed, s.audit))
        c["curves"].append(curve)
        c.setdefault("reported_rounds", []).append(s.best_validation_round)
        c["metric"] = s.headline_metric
        if isinstance(s.peak_memory_bytes, (int, float)):
            c.setdefault("peak_memory", []).append(float(s.peak_memory_bytes))
        for key, value in second.items():    # {seed: accuracy %}
            c.setdefault(key, {})[u.seed] = value
    return cells


AVERAGED = "averaged_model_test_accuracy"


CLIENT = "client_test_accuracy"


# a run's second accuracies, by the report cells' key: paper 002's averaged model (every
# client's private part averaged) and a global model on each client's classes
# (Method.client_tests); the report takes each one's last value from metrics.csv
SECOND_METRICS = {"averaged": AVERAGED, "client": CLIENT}


# client statistics a private run measures in the simulator only (simulation_diagnostics;
# privacy.threat_model.diagnostic_columns): the report gives each run's mean over its last
# DIAGNOSTIC_ROUNDS rounds
SIMULATED = "sim_"
DIAGNOSTIC_ROUNDS = 10


class UnreadableRun(ValueError):
    """A complete-looking run folder whose files a report must not print from."""


def read_run(folder: Path):
    """(summary, accuracy curve in %, second accuracies) of a run folder, or
    UnreadableRun("<file>: <why>"): the summary as :meth:`RunSummary.from_dict` checks it,
    every per-round accuracy a fraction or empty / nan (a round not evaluated); the second
    accuracies (:data:`SECOND_METRICS`, each run's last value in %) those the run records,
    and under "diagnostics" {``sim_`` column: mean over the last :data:`DIAGNOSTIC_ROUNDS`
    rounds} when the run measured its clients' statistics in the simulator."""
    path = folder / "summary.json"
    try:
        s = RunSummary.from_dict(_read_json(path))
    except KeyError as e:
        raise UnreadableRun(f"{path}: no {e.args[0]}") from e
    except (OSError, ValueError, TypeError) as e:
        raise UnreadableRun(f"{path}: {e}") from e
    problem = manifest_problem(folder, bool(s.manifest))
    if problem is not None:
        raise UnreadableRun(problem)
    check_config(folder)
    metric = s.headline_metric                  # personalised where it is
    path = folder / "metrics.csv"
    last = {}                                   # each second accuracy the run records: its last
    try:
        with open(regular_file(path)) as f:
            rows = list(csv.DictReader(f))
        curve = [100.0 * fraction(r[metric], f"{metric} of round {r.get('round', '?')}")
                 if r.get(metric) not in (None, "", "nan") else math.nan for r in rows]
        if rows and math.isnan(curve[-1]):      # the last round is always evaluated
            raise ValueError(f"{metric} of the last round is {rows[-1].get(metric)!r}, "
                             "not a number")
        for key, column in SECOND_METRICS.items():
            values = [100.0 * fraction(r[column], f"{column} of round {r.get('round', '?')}")
                      for r in rows if r.get(column) not in (None, "", "nan")]
            if values:
                last[key] = values[-1]
        window = {}                             # simulator-only client statistics
        for column in (rows[0] if rows else {}):
            if column.startswith(SIMULATED):
                values = [float(r[column]) for r in rows[-DIAGNOSTIC_ROUNDS:]
                          if r.get(column) not in (None, "", "nan")]
                window[column] = float(np.mean(values)) if values else math.nan
        if window:
            last["diagnostics"] = window
    except KeyError as e:
        raise UnreadableRun(f"{path}: no column {e.args[0]}") from e
    except (OSError, ValueError, TypeError, csv.Error) as e:
        raise UnreadableRun(f"{path}: {e}") from e
    return s, curve, last


def check_config(folder: Path) -> None:
    """UnreadableRun when config.json holds a whole config (as every run writes it) whose
    recomputed fingerprint is not the one stored beside it: the file was edited after the
    run, so the numbers are another config's (``engine.finished_runs.complete_run`` makes ``run``
    train it again)."""
    path = folder / "config.json"
    try:
        made = _read_json(path)
    except (OSError, ValueError) as e:
        raise UnreadableRun(f"{path}: {e}") from e
    if not isinstance(made, dict) or "method" not in made:
        return                                   # no config to recompute from
    from ..engine.finished_runs import made_fingerprint
    if made_fingerprint(made) != made.get("fingerprint"):
        raise UnreadableRun(f"{path}: its content is not the config its fingerprint "
                            "names (edited after the run)")


CURVES = "curves.csv"      # each run's accuracy per round, beside the report


def curve_rows(cells: Dict[tuple, dict]) -> List[dict]:
    """One row per complete run and round: what :func:`plot_convergence` draws (accuracy in
    %, empty for a round not evaluated), so that the figure can be redrawn from the report's
    folder alone (``--replot``), without the runs' results. When a run reports the round of
    its best validation accuracy (paper 001's protocol) a column ``reported`` marks that
    round with 1 (no such column otherwise)."""
    marked = any(r is not None for c in cells.values() for r in c.get("reported_rounds", []))
    rows = []
    for (ds, col, m), c in cells.items():
        flags = {"metric": c["metric"], "not_covered": "; ".join(sorted(c["not_covered"])),
                 "data_note": "; ".join(sorted(c["notes"]))}
        reported = c.get("reported_rounds") or [None] * len(c["curves"])
        for seed, curve, best in zip(c.get("seeds", []), c["curves"], reported):
            rows += [{"dataset": ds, "column": "" if col is None else col, "method": m,
                      "seed": seed, "round": r, "accuracy": "" if math.isnan(a) else round(a, 4),
                      **flags, **({"reported": 1 if r == best else ""} if marked else {})}
                     for r, a in enumerate(curve, 1)]
    return rows


def _percent(text: str, line: int) -> float:
    """An accuracy of curves.csv: a finite percentage in [0, 100] (empty: not evaluated)."""
    value = float(text)
    if not 0.0 <= value <= 100.0:              # also nan and inf
        raise ValueError(f"line {line}: accuracy {text!r} is not a percentage in [0, 100]")
    return value


def cells_from_curves(path: Path, spec: TableSpec) -> Dict[tuple, dict]:
    """The cells :func:`plot_convergence` needs, read back from a report's ``curves.csv``
    (:func:`curve_rows`); ConfigError (one line) when the file is missing or unreadable."""
    columns = {"" if c is None else c: c for c in (spec.axis.labels if spec.axis else [None])}
    try:
        with open(regular_file(path)) as f:
            rows = list(csv.DictReader(f))
        runs: Dict[tuple, Dict[int, List[float]]] = {}
        best: Dict[tuple, Dict[int, int]] = {}
        cells: Dict[tuple, dict] = {}
        for n, r in enumerate(rows, 2):           # line numbers of the file (header: 1)
            if None in r or None in r.values():
                raise ValueError(f"line {n} is cut short or has extra fields")
            key = (r["dataset"], columns.get(r["column"], r["column"]), r["method"])
            c = cells.setdefault(key, {"curves": [], "metric": r["metric"],
                                       "not_covered": set(), "notes": set()})
            c["not_covered"] |= {r["not_covered"]} - {""}
            c["notes"] |= {r["data_note"]} - {""}
            curve = runs.setdefault(key, {}).setdefault(int(r["seed"]), [])
            if int(r["round"]) != len(curve) + 1:
                raise ValueError(f"round {r['round']} of {key} seed {r['seed']} out of order")
            curve.append(_percent(r["accuracy"], n) if r["accuracy"] else math.nan)
            if r.get("reported"):             # the run's best-validation round
                best.setdefault(key, {})[int(r["seed"])] = len(curve)
    except FileNotFoundError:
        raise ConfigError(f"--replot: {path} does not exist (reports written before "
                          "curves.csv was kept cannot be redrawn without their runs)") from None
    except (OSError, KeyError, ValueError) as e:
        raise ConfigError(f"--replot: {path} is not a report's curves.csv ({e})") from None
    for key, by_seed in runs.items():
        cells[key]["curves"] = [by_seed[s] for s in sorted(by_seed)]
        cells[key]["reported_rounds"] = [best.get(key, {}).get(s) for s in sorted(by_seed)]
    return cells


def write_csv(path: Path, rows: List[dict]) -> None:
    """``rows`` (dicts with the same keys) as CSV with a header; empty when there are none."""
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    path.write_text(buf.getvalue())
