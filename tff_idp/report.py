"""python -m tff_idp.report TABLE.toml --scale smoke|laptop|paper [--report-dir DIR]

Aggregates a table's results over seeds (mean and sample std), renders the table in the
paper's shape with our number, the paper's number and the difference in each cell, as
Markdown (``report.md``) and CSV (``report.csv``, one row per cell x method; ``curves.csv``,
each run's accuracy per round, from which ``--replot`` redraws the figure), and draws the
table's figures as PNG: convergence curves (mean test accuracy per round, one line per
method, one panel per data set) and Problem-1 rates against epsilon_1. ``noise`` and
``rates`` tables are computed (no training) at the paper's settings. Only complete results
folders are read (a missing one is first copied from an equal run elsewhere under the
results root or in the repository's ``runs/archive/``: ``harness.reuse``); missing units are
listed, never filled in. ``--archive`` copies the complete runs into ``runs/archive/``
(``harness.archive``). Default output folder: ``<output_dir>/<table>/<scale>/report/``.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import math
import signal
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from .atomic import atomic_savefig, regular_file
from .config import ConfigError
from .harness import bounds as bounds_mod
from .harness.table import (TableSpec, Unit, expand, load_table, only_datasets, only_methods,
                            require_scale, unit_complete, with_overrides)


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
    "not_covered": reasons the ledger's epsilon does not bound a run's releases, "segments":
    [each complete run's segments: ``engine.segments``]}} from the complete results folders."""
    from .engine.segments import of_summary
    from .harness import cost
    from .results import is_complete, reported_accuracy
    cells: Dict[tuple, dict] = {}
    for u in units:
        c = cells.setdefault((u.dataset, u.column, u.method),
                             {"acc": [], "seconds": [], "wall": [], "notes": set(), "curves": [],
                              "missing": [], "flops": 0.0, "not_covered": set(),
                              "observers": [], "audits": [], "unreadable": [],
                              "metric": "test_accuracy", "segments": []})
        if not is_complete(u.folder):
            c["missing"].append(u.label)
            continue
        try:
            s, curve = read_run(u.folder)
        except UnreadableRun as e:           # listed, counted as missing, never printed
            c["unreadable"].append(str(e))
            c["missing"].append(u.label)
            continue
        if not unit_complete(u):             # made with another config: stale
            c["missing"].append(u.label)
            continue
        c["flops"] += cost.unit_cost(u.cfg)["flops"]
        c["acc"].append(100.0 * reported_accuracy(s))
        c.setdefault("seeds", []).append(u.seed)
        c["seconds"].append(float(s["seconds_total"]))
        c["segments"].append(of_summary(s))
        c["wall"].append((float(s["seconds_setup"]), float(s["seconds_eval"]))
                         if s.get("seconds_wall") is not None else None)
        if s.get("data_note"):
            c["notes"].add(s["data_note"])
        guarantee = s.get("privacy", {}).get("guarantee", {})
        if guarantee.get("valid") is False:
            c["not_covered"].add(guarantee.get("why_not_valid", "not covered by the ledger"))
        if s.get("privacy", {}).get("groups"):
            c["observers"].append(s["privacy"])
        if s.get("audit"):
            c["audits"].append((u.seed, s["audit"]))
        c["curves"].append(curve)
        c["metric"] = s.get("headline_metric", "test_accuracy")
        if isinstance(s.get("peak_memory_bytes"), (int, float)):
            c.setdefault("peak_memory", []).append(float(s["peak_memory_bytes"]))
        for key, value in s.get("second_metrics", {}).items():   # {seed: accuracy %}
            c.setdefault(key, {})[u.seed] = value
    return cells


AVERAGED = "averaged_model_test_accuracy"
CLIENT = "client_test_accuracy"
# a run's second accuracies, by the report cells' key: paper 002's averaged model (every
# client's private part averaged) and a global model on each client's classes
# (Method.client_tests); the report takes each one's last value from metrics.csv
SECOND_METRICS = {"averaged": AVERAGED, "client": CLIENT}


def _second_metric_table(spec, cells, key: str, heading: str, text: str) -> List[str]:
    """A report section tabulating a run's second accuracy ({seed: %} under ``key`` in the
    cells: "averaged", "client"), for the methods that have it; none when no run has it."""
    methods = [m for m in spec.methods
               if any(c.get(key) for k, c in cells.items() if k[2] == m)]
    if not methods:
        return []
    table, _ = train_table(dataclasses.replace(spec, methods=methods),
                           {k: dict(c, acc=list(c.get(key, {}).values()))
                            for k, c in cells.items()}, compare=False)
    return [f"## {heading}", "", text, "", table, ""]


class UnreadableRun(ValueError):
    """A complete-looking run folder whose files a report must not print from."""


def _fraction(value, what: str) -> float:
    v = float(value)
    if not (math.isfinite(v) and 0.0 <= v <= 1.0):
        raise ValueError(f"{what} is {value!r}, not a fraction in [0, 1]")
    return v


def read_run(folder: Path):
    """(summary, accuracy curve in %) of a run folder, or UnreadableRun("<file>: <why>"):
    the reported accuracy a finite fraction in [0, 1], seconds finite and non-negative, the
    privacy record (if any) an object, every per-round accuracy a fraction or empty / nan
    (a round not evaluated)."""
    from .results import reported_accuracy
    path = folder / "summary.json"
    try:
        s = _read_json(path)
        if not isinstance(s, dict):
            raise ValueError("not a JSON object")
        _fraction(reported_accuracy(s), "the accuracy")
        seconds = float(s["seconds_total"])
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ValueError(f"seconds_total is {s['seconds_total']!r}")
        if s.get("seconds_wall") is not None:
            float(s["seconds_setup"]), float(s["seconds_eval"])
        for key in ("privacy", "plan", "audit"):
            if key in s and not isinstance(s[key], dict):
                raise ValueError(f"{key} is not an object")
        if "groups" in s.get("privacy", {}) and not isinstance(s["privacy"]["groups"], dict):
            raise ValueError("privacy.groups is not an object")
    except KeyError as e:
        raise UnreadableRun(f"{path}: no {e.args[0]}") from e
    except (OSError, ValueError, TypeError) as e:
        raise UnreadableRun(f"{path}: {e}") from e
    metric = s.get("headline_metric", "test_accuracy")   # personalised where it is
    path = folder / "metrics.csv"
    try:
        with open(regular_file(path)) as f:
            rows = list(csv.DictReader(f))
        curve = [100.0 * _fraction(r[metric], f"{metric} of round {r.get('round', '?')}")
                 if r.get(metric) not in (None, "", "nan") else math.nan for r in rows]
        last = {}                        # each second accuracy the run records: its last
        for key, column in SECOND_METRICS.items():
            values = [100.0 * _fraction(r[column], f"{column} of round {r.get('round', '?')}")
                      for r in rows if r.get(column) not in (None, "", "nan")]
            if values:
                last[key] = values[-1]
        if last:
            s = dict(s, second_metrics=last)
    except KeyError as e:
        raise UnreadableRun(f"{path}: no column {e.args[0]}") from e
    except (OSError, ValueError, TypeError) as e:
        raise UnreadableRun(f"{path}: {e}") from e
    return s, curve


def observer_rows(cells: Dict[tuple, dict]) -> List[dict]:
    """Per cell with a ledger, each observer's epsilon per group, the largest over its
    complete runs (``tff_idp.privacy.threat_model``): those who see the released models
    (amplified, what the budgets are checked against) and the server (no amplification;
    none where the server drew the noise)."""
    out = []
    for (ds, col, method), c in cells.items():
        if not c["observers"]:
            continue
        groups = sorted(c["observers"][0]["groups"], key=int)
        worst = lambda key: [max(p["groups"][g].get(key, math.nan) for p in c["observers"])
                             for g in groups]
        server = worst("server_epsilon")
        drawn_by_server = any(p["guarantee"].get("observers", {}).get("server", {}).get(
            "epsilon", "") is None for p in c["observers"])
        out.append({
            "dataset": ds, "column": col or "", "method": method,
            "budgets": " / ".join(f"{c['observers'][0]['groups'][g]['budget']:g}"
                                  for g in groups),
            "eps_model_viewers": " / ".join(f"{e:.3g}" for e in worst("realised_epsilon")),
            "eps_server": "none (server-drawn noise)" if drawn_by_server else
            "not recorded" if any(math.isnan(e) for e in server) else
            " / ".join(f"{e:.3g}" for e in server),
            "budgets_met_against": "; ".join(sorted({
                p["guarantee"].get("budget_met_against", "") for p in c["observers"]}))
            + (" †" if c["not_covered"] else "")})
    return out


def _fmt_cell(mean, std, paper, seeds: int = 2) -> str:
    if mean is None:
        ours = "missing"
    elif seeds == 1:
        ours = f"{mean:.2f} (1 seed)"
    else:
        ours = f"{mean:.2f} ± {std:.2f}"
    if paper is None or not isinstance(paper, (int, float)):
        return ours
    diff = "" if mean is None else f" ({mean - paper:+.2f})"
    return f"{ours} / {paper:.2f}{diff}"


def train_table(spec: TableSpec, cells: Dict[tuple, dict], compare: bool = True):
    """(markdown table text, csv rows) in the paper's layout; ``compare=False`` (smoke
    scale: two rounds, stand-in data) leaves the paper's numbers and the differences out,
    since ours there check the wiring only."""
    rows_csv = []
    for (ds, col, method), c in cells.items():
        mean, std = mean_std(c["acc"])
        paper = spec.reference_value(ds, method, col) if compare else None
        paper = paper if isinstance(paper, (int, float)) else None
        rows_csv.append({"dataset": ds, "column": col or "", "method": method,
                         "seeds_done": len(c["acc"]), "seeds_missing": len(c["missing"]),
                         "ours_mean": "" if mean is None else round(mean, 3),
                         "ours_std": "" if std is None else round(std, 3),
                         "paper": "" if paper is None else paper,
                         "difference": "" if mean is None or paper is None else
                         round(mean - paper, 3)})
    datasets = list(spec.datasets)
    labels = spec.axis.labels if spec.axis is not None else [None]

    def cell(ds, col, method):
        if method not in spec.methods_of(ds, col):     # a column that does not run it
            return "-"
        c = cells.get((ds, col, method))
        mean, std = mean_std(c["acc"]) if c else (None, None)
        paper = spec.reference_value(ds, method, col) if compare else None
        text = _fmt_cell(mean, std, paper if isinstance(paper, (int, float)) else None,
                         len(c["acc"]) if c else 0)
        return text + (" †" if c and c["not_covered"] else "")

    layout = spec.layout
    if layout == "method x dataset":
        head = ["Method"] + datasets
        body = [[m] + [cell(ds, None, m) for ds in datasets] for m in spec.methods]
    elif layout == "method x axis":
        ds = datasets[0]
        head = ["Method"] + labels
        body = [[m] + [cell(ds, lab, m) for lab in labels] for m in spec.methods]
    elif layout == "axis x dataset":
        head = [spec.axis.key if spec.axis.key != "*" else "setting"] + datasets
        body = [[lab] + [cell(ds, lab, spec.methods_of(ds, lab)[0]) for ds in datasets]
                for lab in labels]
    else:   # dataset/method x axis
        head = ["Dataset", "Method"] + labels
        body = [[ds, m] + [cell(ds, lab, m) for lab in labels]
                for ds in datasets for m in spec.methods]
    return _markdown(head, body), rows_csv


def _markdown(head, body) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(x) for x in row) + " |" for row in body]
    return "\n".join(out)


def noise_table(spec: TableSpec):
    """sigma per group and Lambda of every (data set, method), at the paper's settings."""
    from .config import from_mapping, validate
    from .engine.experiment import plan_all, plan_summary
    head = ["Method"] + list(spec.datasets)
    body, rows_csv = [], []
    results = {}
    for ds in spec.datasets:
        values = spec.cell_values(ds, None)
        cfg = validate(from_mapping(dict(values, methods=spec.methods)))
        _, setting, plans = plan_all(cfg)
        for m in spec.methods:
            results[(ds, m)] = plan_summary(plans[m], setting)
    for m in spec.methods:
        row = [m]
        for ds in spec.datasets:
            r = results[(ds, m)]
            sig = np.sqrt(r["noise_multipliers_sq"])
            sig = sig[:1] if m == "dp_fedavg" else sig
            lam = r.get("noise_magnitude")
            ours = "(" + ", ".join(f"{x:.2f}" for x in sig ** 2) + f") / {lam:.2f}"
            ref = spec.reference_value(ds, m, None) or {}
            paper = ""
            if ref:
                paper = "(" + ", ".join(f"{x:.2f}" for x in ref["sigma_sq"]) + \
                    f") / {ref['Lambda']:.2f}"
            row.append(ours + (f" vs paper {paper}" if paper else ""))
            rows_csv.append({"dataset": ds, "method": m,
                             "sigma": " ".join(f"{x:.4f}" for x in sig),
                             "sigma_sq": " ".join(f"{x:.4f}" for x in sig ** 2),
                             "Lambda": round(lam, 4),
                             "rates_%": " ".join(f"{100 * q:.3f}" for q in r["rates"]),
                             "paper_sigma_sq": " ".join(str(x) for x in ref.get("sigma_sq", [])),
                             "paper_Lambda": ref.get("Lambda", "")})
        body.append(row)
    return _markdown(head, body), rows_csv


def rates_sweep(spec: TableSpec):
    """Problem-1 rates for every epsilon_1 of ``rates_sweep`` (Figure 1): {dataset: (eps1
    values, rates array [len(eps), M])}."""
    from .config import from_mapping, validate
    from .data import assign_groups
    from .privacy import gdpfed
    out = {}
    for ds in spec.datasets:
        cfg = validate(from_mapping(dict(spec.cell_values(ds, None), methods=["gdpfed_plus"])))
        sizes = np.bincount(assign_groups(cfg.num_clients, cfg.group_ratios, cfg.seed),
                            minlength=len(cfg.budgets))
        eps1 = spec.rates_sweep[ds]
        rates = []
        for e in eps1:
            budgets = [e] + list(cfg.budgets[1:])
            rates.append(gdpfed.optimal_sampling_rates(budgets, sizes, cfg.expected_rate,
                                                       cfg.rounds, cfg.resolved_delta,
                                                       cfg.local_lr, cfg.local_steps))
        out[ds] = (list(eps1), np.asarray(rates))
    return out


def bounds_caption(spec: TableSpec) -> str:
    """The settings a bounds figure rests on, from its config."""
    values = {**bounds_mod.DEFAULTS, **spec.base}
    keys = [k for k in bounds_mod.KEYS if k not in (spec.bounds.x, spec.bounds.curves)]
    return ("Settings: " + ", ".join(f"{k}={values[k]}" for k in keys if k in values) +
            f", examples per client={spec.bounds.examples_per_client}.")


def bounds_table(b, rows) -> str:
    """Points as a markdown table: one row per curve, one column per x value."""
    curves = list(dict.fromkeys(r["curve"] for r in rows))
    head = ["curve"] + [f"{b.x}={x}" for x in b.x_values]
    body = [[c] + ["-" if r[b.quantity] is None else f"{r[b.quantity]:.4g}"
                   for r in rows if r["curve"] == c] for c in curves]
    text = _markdown(head, body)
    if any("total_delta" in r for r in rows):   # Theorem 4's delta is not the paper's 1e-4
        body = [[c] + [f"{r['total_delta']:.3g}" for r in rows if r["curve"] == c]
                for c in curves]
        text += "\n\nTotal delta of each point (T delta_c + delta~, Theorem 4):\n\n" + \
            _markdown(head, body)
    return text


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _legend_below(fig, handles, labels) -> None:
    """The figure's legend in rows below its panels, off the lines, and the panels laid out
    above it."""
    longest = max((len(lab) for lab in labels), default=0)
    column = 0.6 + 0.07 * longest       # inches: the line handle and characters at fontsize 8
    ncol = max(1, min(len(labels), int(fig.get_figwidth() // max(1.6, column))))
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    rows = -(-len(labels) // ncol)
    # a legend row is about 0.25 inch at fontsize 8, whatever the figure's height
    fig.tight_layout(rect=(0, (0.25 * rows + 0.12) / fig.get_figheight(), 1, 1))


def plot_convergence(spec: TableSpec, cells, path: Path, scale: str = "paper"
                     ) -> Optional[Path]:
    """Mean test accuracy per round over seeds (a band of one std), one panel per data set (or
    per data set and group of columns, ``[axis] panels``) in a grid of at most three
    columns, methods by their papers' names (with † where the ledger does not cover the
    run), the paper's final value as a star at the last round where it has one (smoke
    scale: none); the y axis names the metric (personalised accuracy for methods evaluated
    on each client's own model); a panel with no complete run says so; the title, wrapped,
    says the scale and when the data were synthetic stand-ins; the legend sits below the
    panels."""
    plt = _plt()
    from .methods import paper_name
    datasets = list(spec.datasets)
    columns = spec.axis.labels if spec.axis else [None]
    groups = (spec.axis.panels if spec.axis else None) or {"": columns}
    layout = [(ds, f"{ds}: {title}" if title else ds, members)
              for ds in datasets for title, members in groups.items()]
    ncols = min(3, len(layout))
    nrows = -(-len(layout) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(6.4, 4.4 * ncols), 3.6 * nrows + 0.6),
                             squeeze=False)
    panels = list(axes.flat)
    for ax in panels[len(layout):]:
        ax.set_visible(False)
    drawn, synthetic, banded, seeds = False, False, False, set()
    for ax, (ds, panel_title, members) in zip(panels, layout):
        pairs = [(col, m) for col in members for m in spec.methods_of(ds, col)]
        metrics, last_round, stars = set(), 0, []
        for col, m in pairs:
            c = cells.get((ds, col, m))
            if not c or not c["curves"]:
                continue
            synthetic |= any("synthetic" in n for n in c["notes"])
            metrics.add(c["metric"])
            label = paper_name(m) if col is None else f"{paper_name(m)}, {col}"
            label += " †" if c["not_covered"] else ""
            line, x = _seed_band(ax, c["curves"], label, markers=True)
            last_round = max(last_round, len(x))
            seeds.add(len(c["curves"]))
            banded |= len(c["curves"]) > 1
            paper = spec.reference_value(ds, m, col) if scale != "smoke" else None
            if isinstance(paper, (int, float)):
                stars.append((paper, line.get_color()))
            drawn = True
        ax.set_title(panel_title)
        if not last_round:               # no complete run of this panel's cells yet
            ax.text(0.5, 0.5, "no complete run yet", ha="center", va="center",
                    transform=ax.transAxes, color="grey")
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        for i, (paper, color) in enumerate(stars):
            _paper_star(ax, last_round, paper, color, i)
        _star_margin(ax, last_round, len(stars))   # also when only the last was evaluated
        ax.set_xlabel("round")
        ax.set_ylabel(_accuracy_label(metrics))
        ax.grid(alpha=0.3)
    if not drawn:
        plt.close(fig)
        return None
    handles, labels = panels[0].get_legend_handles_labels()
    for ax in panels[1:len(layout)]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if scale != "smoke" and any(isinstance(spec.reference_value(ds, m, col), (int, float))
                                for ds in datasets for col in columns
                                for m in spec.methods_of(ds, col)):
        handles.append(_paper_star(None, None, None, "grey"))
        labels.append("paper's final value")
    if banded:
        _band_legend(handles, labels)
    over = ("one seed" if seeds == {1} else f"mean over {max(seeds)} seeds" if len(seeds) == 1
            else f"mean over {min(seeds)}-{max(seeds)} seeds by cell")
    title = f"{spec.name}: convergence ({over}), scale {scale}"
    if synthetic:
        title += " - synthetic stand-in data (wiring check)"
    fig.suptitle("\n".join(textwrap.wrap(title, int(fig.get_figwidth() * 14))), fontsize=10)
    _legend_below(fig, handles, labels)
    atomic_savefig(fig, path, dpi=110)
    plt.close(fig)
    return path


def _star_step(last_round: int) -> float:
    """Rounds between two paper stars right of the curves (:func:`_paper_star`)."""
    return max(0.8, 0.03 * last_round)


def _paper_star(ax, last_round, value, color, index: int = 0):
    """The paper's final value as a star in the method's colour, right of the last round:
    the ``index``-th method of the panel one :func:`_star_step` further right, so that
    equal or close values stay apart (``ax`` None: the legend's marker, drawn nowhere)."""
    style = dict(marker="*", markersize=11, linestyle="none", color=color,
                 markeredgecolor="k")
    if ax is None:
        import matplotlib.lines
        return matplotlib.lines.Line2D([], [], **style)
    x = last_round + (index + 1) * _star_step(last_round)
    return ax.plot([x], [value], zorder=5, clip_on=False, **style)[0]


def _star_margin(ax, last_round: int, stars: int) -> None:
    """The x range of rounds 1..T plus the stars' strip, the strip marked "paper"; ticks at
    rounds within 1..T only."""
    from matplotlib.ticker import MaxNLocator
    ax.set_xticks([t for t in MaxNLocator(integer=True).tick_values(1, last_round)
                   if 1 <= t <= last_round])
    if not stars:
        ax.set_xlim(0.5, last_round + 0.5)
        return
    step = _star_step(last_round)
    right = last_round + (stars + 0.7) * step
    ax.set_xlim(0.5, right)
    ax.axvspan(last_round + 0.4 * step, right, color="grey", alpha=0.08, lw=0)
    ax.text(last_round + (stars + 1) * step / 2, 1.0, "paper", transform=ax.get_xaxis_transform(),
            ha="center", va="bottom", fontsize=7, color="grey")


def _accuracy_label(metrics) -> str:
    """The y axis of accuracy curves: personalised where every run reports it, said to be
    personalised for some methods where runs of both kinds share the axis."""
    if set(metrics) == {"personal_test_accuracy"}:
        return "personalised test accuracy (%)"
    if "personal_test_accuracy" in metrics:
        return "test accuracy (%), personalised\nfor methods with a personal part"
    return "test accuracy (%)"


def _seed_band(ax, curves, label: str, markers: bool = False):
    """One method's curves over seeds on ``ax``: their mean (rounds not evaluated left out)
    and, with several seeds, a shaded mean +- 1 sample std (the std the tables give).
    Returns (the line, the rounds 1..T)."""
    curves = np.asarray(curves, float)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # rounds not evaluated
        mean = np.nanmean(curves, axis=0)
        sd = np.nanstd(curves, axis=0, ddof=1) if len(curves) > 1 else 0 * mean
    x = np.arange(1, len(mean) + 1)
    keep = np.isfinite(mean)                                 # eval_every's gaps
    line, = ax.plot(x[keep], mean[keep], label=label,
                    marker="o" if markers and keep.sum() < 12 else None)
    if len(curves) > 1:
        ax.fill_between(x[keep], (mean - sd)[keep], (mean + sd)[keep], alpha=0.2,
                        color=line.get_color())
    return line, x


def _band_legend(handles: list, labels: list) -> None:
    """The legend entry that says what the shaded band is."""
    from matplotlib.patches import Patch
    handles.append(Patch(color="grey", alpha=0.2))
    labels.append("shaded: mean ± 1 std over seeds")


def plot_run_curves(folders: Dict[str, object], path: Path, title: str,
                    reference: Optional[Dict[str, float]] = None) -> Path:
    """One experiment config's methods (``folders``: method -> its run folder, or a list of
    its seeds' folders): test accuracy per round (with several seeds their mean and a
    shaded mean +- 1 std band), the paper's value (``reference``) as a star at the last
    round."""
    plt = _plt()
    from .methods import paper_name
    fig, ax = plt.subplots(figsize=(7.2, 4.4))
    metrics, banded, stars, last_round = set(), False, [], 0
    for method, where in folders.items():
        runs = [read_run(f) for f in (where if isinstance(where, (list, tuple)) else [where])]
        s = runs[0][0]
        covered = s.get("privacy", {}).get("guarantee", {}).get("valid") is not False
        line, x = _seed_band(ax, [curve for _, curve in runs],
                             paper_name(method) + ("" if covered else " †"))
        banded |= len(runs) > 1
        last_round = max(last_round, int(x[-1]))
        paper = (reference or {}).get(method)
        if paper is not None:
            stars.append((paper, line.get_color()))
        metrics.add(s.get("headline_metric", "test_accuracy"))
    for i, (paper, color) in enumerate(stars):
        _paper_star(ax, last_round, paper, color, i)
    _star_margin(ax, last_round, len(stars))
    ax.set_xlabel("round")
    ax.set_ylabel(_accuracy_label(metrics))
    ax.grid(alpha=0.3)
    ax.set_title("\n".join(textwrap.wrap(title, 80)), fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    if banded:
        _band_legend(handles, labels)
    if reference:
        handles.append(_paper_star(None, None, None, "grey"))
        labels.append("paper's final value")
    _legend_below(fig, handles, labels)
    atomic_savefig(fig, path, dpi=110)
    plt.close(fig)
    return path


def plot_rates(spec: TableSpec, sweep, path: Path) -> Path:
    """Problem 1's rates against epsilon_1, one panel per data set, the paper's Table I rates
    as crosses at the default epsilon_1; the legend below the panels, off the lines."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(sweep), figsize=(max(4.8, 4.5 * len(sweep)), 3.9),
                             squeeze=False)
    for ax, (ds, (eps, rates)) in zip(axes[0], sweep.items()):
        for g in range(rates.shape[1]):
            ax.plot(eps, 100 * rates[:, g], marker="o", label=f"q_{g + 1}")
        ref = spec.reference_value(ds, "gdpfed_plus", None)
        if isinstance(ref, dict) and "rates_%" in ref:
            cfg_eps = spec.cell_values(ds, None)["budgets"][0]
            for g, q in enumerate(ref["rates_%"]):
                ax.plot([cfg_eps], [q], marker="x", color="k", linestyle="none",
                        label="paper (Table I)" if g == 0 else None)
        ax.set_title(ds)
        ax.set_xlabel("epsilon_1")
        ax.set_ylabel("sampling rate (%)")
        ax.grid(alpha=0.3)
    fig.suptitle("\n".join(textwrap.wrap(f"{spec.title} (computed)",
                                         int(fig.get_figwidth() * 11))), fontsize=10)
    _legend_below(fig, *axes[0][0].get_legend_handles_labels())
    atomic_savefig(fig, path, dpi=110)
    plt.close(fig)
    return path


def where_trained(cells) -> str:
    """The processes and machines that trained the complete runs' rounds, by kind of machine
    (``engine.segments``; runs made before segments were kept count as not recorded)."""
    from .engine.segments import summarise
    w = summarise([seg for c in cells.values() for seg in c.get("segments", [])])
    plural = lambda n, word, many=None: f"{n} {word if n == 1 else many or word + 's'}"
    if not w["kinds"]:
        return ("not recorded (runs made before summary.json kept `segments`; `machine` "
                "there names the last process's host only).")
    kinds = "; ".join(
        f"{plural(k['rounds'], 'round')}, {k['seconds']:.0f} s on {kind} "
        f"({plural(k['machines'], 'machine')})" for kind, k in sorted(w["kinds"].items()))
    text = (f"{plural(w['processes'], 'process', 'processes')} on "
            f"{plural(w['machines'], 'machine')} (one machine: one host and boot; "
            f"summary.json: segments): {kinds}")
    if w["unrecorded_rounds"]:
        text += (f"; {plural(w['unrecorded_rounds'], 'round')} on machines not recorded "
                 "(trained before segments were kept)")
    return text + "."


def cost_lines(spec: TableSpec, cells, scale: str) -> List[str]:
    """Measured time at this scale and estimated GPU hours at paper scale."""
    from .harness import cost
    lines = []
    secs = sum(sum(c["seconds"]) for c in cells.values())
    done = sum(len(c["acc"]) for c in cells.values())
    lines.append(f"- Training time of the {done} complete runs at `{scale}` scale: {secs:.0f} s "
                 "(sum of per-run training time, each round timed by the process that trained "
                 "it; excludes start-up).")
    lines.append(f"- Where they trained: {where_trained(cells)}")
    walls = [w for c in cells.values() for w in c["wall"]]
    if walls and None not in walls:
        setup, evals = (sum(w[i] for w in walls) for i in (0, 1))
        lines.append(f"- Wall time of those runs: {secs + setup + evals:.0f} s: training "
                     f"{secs:.0f} s, evaluation {evals:.0f} s, start-up {setup:.0f} s (data, "
                     "model, backend; a run resumed from a checkpoint counts its last "
                     "start-up only).")
    peaks = [m for c in cells.values() for m in c.get("peak_memory", [])]
    if peaks:
        lines.append(f"- Peak resident memory of a run: {max(peaks) / 2 ** 30:.2f} GB at most, "
                     f"{float(np.median(peaks)) / 2 ** 30:.2f} GB median over the {len(peaks)} "
                     "runs that record it (summary.json: peak_memory_bytes).")
    here_flops = sum(c["flops"] for c in cells.values())
    if secs > 0 and here_flops > 0:
        lines.append(f"- Achieved rate: {here_flops / secs / 1e9:.1f} GFLOP/s "
                     "(model FLOPs / training time, on the machines above).")
    paper_units = expand(spec, "paper")
    costs = [cost.unit_cost(u.cfg) for u in paper_units]
    flops = sum(c["flops"] for c in costs)
    hours = cost.gpu_hours(sum(c["gpu_seconds"] for c in costs))
    amount = f"{hours:.1f} GPU-hours" if hours >= 1 else f"{60 * hours:.1f} GPU-minutes"
    lines.append(f"- Paper scale: {len(paper_units)} runs, {flops / 1e15:.2g} PFLOP; estimated "
                 f"{amount} on one RTX A6000 ({100 * cost.GPU_UTILISATION:.0f}% "
                 f"of its fp32 peak, at least {1000 * cost.GPU_STEP_LATENCY:.0f} ms per step of "
                 "a chunk of clients on the fast backend; method and assumptions: "
                 "`tff_idp/harness/cost.py`).")
    return lines


def audit_rows(cells: Dict[tuple, dict]) -> List[dict]:
    """One row per audited run (``tff_idp.audit``): the audited group's epsilon in the ledger
    beside Andrew et al.'s one-shot estimate and Steinke et al.'s lower bound, for who sees
    the final model and who sees every round's."""
    out = []
    for (ds, col, method), c in cells.items():
        for seed, a in sorted(c["audits"], key=lambda x: x[0]):
            ledger = a.get("ledger_epsilon")
            row = {"dataset": ds, "column": col or "", "method": method, "seed": seed,
                   "group": a["group"], "canaries (inserted)": f"{a['canaries']} "
                   f"({a['inserted']})",
                   "ledger eps": "not private" if ledger is None else f"{ledger:.3g}"}
            for key, name in (("final_model", "final model"), ("every_round", "every round")):
                bound = a[key]["lower_bound"]
                interval = a[key].get("one_shot_interval")
                row[f"{name}: estimate [90%]"] = f"{a[key]['one_shot_estimate']:.3g}" + (
                    f" [{interval[0]:.3g}, {interval[1]:.3g}]" if interval else "")
                row[f"{name}: LB (max)"] = f"{bound['epsilon']:.3g}" + (
                    f" ({bound['ceiling']:.3g})" if "ceiling" in bound else "")
                row[f"{name}: verdict"] = bound.get("verdict", "-")
                row[f"{name}: correct / guesses"] = f"{bound['correct']} / {bound['guesses']}"
            row["audit s"] = f"{a.get('seconds', math.nan):.0f}"
            out.append(row)
    return out


def report_dir(spec: TableSpec, scale: str, output_dir: Optional[str] = None,
               out: Optional[Path] = None) -> Path:
    """``out``, or the table's own report folder: <results>/<table>/<scale>/report."""
    return Path(out) if out is not None else spec.out_root(scale, output_dir) / "report"


def write_report(spec: TableSpec, scale: str, out: Optional[Path] = None,
                 output_dir: Optional[str] = None) -> Path:
    """The report of ``spec`` at ``scale`` from the results under ``output_dir`` (default the
    table's own), written to ``out`` (default <results>/<table>/<scale>/report)."""
    out = report_dir(spec, scale, output_dir, out)
    out.mkdir(parents=True, exist_ok=True)
    md = [f"# {spec.title}", "", f"Source: {spec.source}. Config: `{spec.path}`."]
    changed = spec.computing_overrides()
    if changed:
        md += ["", "**Changed from the table as written**, in every run: " +
               ", ".join(f"`--set {item}`" for item in changed) + "."]
    if spec.notes:
        md += ["", spec.notes]
    figures = []
    if spec.kind == "train":
        units = expand(spec, scale, output_dir)
        cells = collect(units)
        compare = scale != "smoke"
        text, rows_csv = train_table(spec, cells, compare)
        missing = [m for c in cells.values() for m in c["missing"]]
        notes = sorted({n for c in cells.values() for n in c["notes"]})
        has_paper = any(spec.reference.values())
        md += ["", f"Scale `{scale}`: {len(units) - len(missing)} of {len(units)} runs "
               "complete. Each cell: ours (mean ± std over seeds)" +
               ("; this table has no paper numbers (no [reference])" if not has_paper else
                " / paper (ours - paper)" if compare else
                "; the paper's numbers are left out at smoke scale (two rounds, mostly on "
                "stand-in data: a check of the wiring, not a reproduction)") +
               "; test accuracy in %.", ""]
        if notes:
            md += ["**Data:** " + "; ".join(notes) + ". Numbers on stand-in data check the "
                   "wiring only; they are not comparable with the paper's.", ""]
        uncovered = sorted({n for c in cells.values() for n in c["not_covered"]})
        if uncovered:
            md += ["**Privacy:** cells marked † report runs whose privacy ledger does not "
                   "bound everything the server sees: " + "; ".join(uncovered) + ".", ""]
        md += [text, ""]
        if missing:
            md += [f"Missing runs ({len(missing)}): " + ", ".join(missing[:20]) +
                   (" ..." if len(missing) > 20 else ""), ""]
        unreadable = [w for c in cells.values() for w in c["unreadable"]]
        if unreadable:
            md += [f"Unreadable runs ({len(unreadable)}, counted as missing): " +
                   "; ".join(f"unreadable: {w}" for w in unreadable), ""]
        md += _second_metric_table(
            spec, cells, "averaged", "The averaged model",
            "Test accuracy (%) at the last round of the model whose private part is the mean "
            f"of every client's, on the whole test set (metrics.csv: `{AVERAGED}`), beside "
            "the personalised accuracy above.")
        md += _second_metric_table(
            spec, cells, "client", "The global model on each client's classes",
            "Test accuracy (%) at the last round of the methods' one model on each client's "
            "own test examples (those of the classes it trains on), mean over clients "
            f"(metrics.csv: `{CLIENT}`): like for like with a personalised accuracy above.")
        if spec.claims:
            from .harness import claims as claims_mod
            checked = claims_mod.check(spec.claims, cells)
            md += ["## The paper's claims, checked", "",
                   "Each claim an ordering of cells, in the order it names them; gap: the "
                   "difference of consecutive cells' means in the claim's direction (positive: "
                   "as claimed), with twice its standard error over the seeds (seed by seed "
                   "where both cells ran the same seeds: a seed draws the same check-ins, "
                   "noise and data order). Verdict: holds "
                   "(every gap above 2 SE), holds on the means within the seed noise, reversed "
                   "on the means within the seed noise, does not hold (a gap below -2 SE), "
                   "not run (`tff_idp/harness/claims.py`).", "",
                   _markdown(["Claim", "Paper", "Ours", "Gap", "Verdict"],
                             [list(r.values()) for r in checked]), ""]
            _write_csv(out / "claims.csv", checked)
        privacy = observer_rows(cells)
        if privacy:
            md += ["## Privacy, by observer", "",
                   "Epsilon per privacy group at the run's delta, the largest over the seeds. "
                   "Model viewers: add/remove (or replace) one client, amplified by the "
                   "sampling of clients, which is secret from them; the budgets are checked "
                   "against this one. Server: the largest client's composition of its "
                   "participations' Gaussian releases, without amplification (the server "
                   "draws the cohort), under secure aggregation of client-drawn noise.", "",
                   _markdown(list(privacy[0]), [list(r.values()) for r in privacy]), ""]
        audits = audit_rows(cells)
        if audits:
            first = next(a for c in cells.values() for _, a in c["audits"])
            md += ["## Canary audit", "",
                   "Per audited run: the ledger's epsilon of the audited group (model viewers, "
                   f"delta {first['delta']:.3g}) beside Andrew et al.'s one-shot estimate (an "
                   "estimate, not a bound; its 90% bootstrap interval where recorded) and "
                   "Steinke et al.'s lower bound at "
                   f"{first['confidence']:.0%} confidence family-wise (a union bound over the "
                   "guess counts tried where recorded; max: the largest bound this many "
                   "canaries can give), with the guesses it rests on, for "
                   "who sees only the final model and who sees every round's model. A lower "
                   "bound above the ledger's epsilon would mean the mechanism leaks more than "
                   "it claims; where the max is not above it the audit cannot detect a leak "
                   "(verdict 'cannot detect'). Runs audited before the union bound (no max "
                   "recorded) state the best of five counts each at 95%, about 75% "
                   "family-wise. Canaries are not in the accuracy; their runs are not the "
                   "plain table's (docs/audit.md).", "",
                   _markdown(list(audits[0]), [list(r.values()) for r in audits]), ""]
        md += ["## Cost", ""] + cost_lines(spec, cells, scale)
        _write_csv(out / CURVES, curve_rows(cells))
        if "convergence" in spec.figures:
            p = plot_convergence(spec, cells, out / "convergence.png", scale)
            if p:
                figures.append(p)
    elif spec.kind == "noise":
        text, rows_csv = noise_table(spec)
        md += ["", "Computed at the paper's settings (no training; `--scale` does not apply). "
               "Each cell: our sigma_m^2 per group / Lambda, then the paper's printed numbers.",
               "", text]
    elif spec.kind == "bounds":
        rows_csv = []
        md += ["", "Computed from the paper's closed forms (no training; `--scale` does not "
               "apply). Every value not in the paper is in the config file.", ""]
        for ds in spec.datasets:
            rows = bounds_mod.compute(spec.bounds, spec.cell_values(ds, None))
            caption = f"{spec.source}. " + bounds_caption(spec)
            paths = bounds_mod.write(spec.bounds, rows, out / ds, spec.title, caption)
            figures.append(paths[1])
            rows_csv += [{"dataset": ds, **r} for r in rows]
            md += [f"### {ds}", "", bounds_table(spec.bounds, rows), ""]
    else:
        sweep = rates_sweep(spec)
        rows_csv = []
        md += ["", "Problem-1 rates (%) computed at the paper's settings (no training).", ""]
        for ds, (eps, rates) in sweep.items():
            head = ["epsilon_1"] + [f"q_{g + 1} %" for g in range(rates.shape[1])]
            body = [[f"{e:g}"] + [f"{100 * q:.2f}" for q in r] for e, r in zip(eps, rates)]
            md += [f"### {ds}", "", _markdown(head, body), ""]
            for e, r in zip(eps, rates):
                rows_csv.append({"dataset": ds, "epsilon_1": e,
                                 **{f"q{g + 1}_%": round(100 * q, 4) for g, q in enumerate(r)}})
        figures.append(plot_rates(spec, sweep, out / "rates.png"))
    for f in figures:             # every figure is written under out
        md += ["", f"![{f.stem}]({f.relative_to(out)})"]
    (out / "report.md").write_text("\n".join(md) + "\n")
    _write_csv(out / "report.csv", rows_csv)
    return out / "report.md"


CURVES = "curves.csv"      # each run's accuracy per round, beside the report


def curve_rows(cells: Dict[tuple, dict]) -> List[dict]:
    """One row per complete run and round: what :func:`plot_convergence` draws (accuracy in
    %, empty for a round not evaluated), so that the figure can be redrawn from the report's
    folder alone (``--replot``), without the runs' results."""
    rows = []
    for (ds, col, m), c in cells.items():
        flags = {"metric": c["metric"], "not_covered": "; ".join(sorted(c["not_covered"])),
                 "data_note": "; ".join(sorted(c["notes"]))}
        for seed, curve in zip(c.get("seeds", []), c["curves"]):
            rows += [{"dataset": ds, "column": "" if col is None else col, "method": m,
                      "seed": seed, "round": r, "accuracy": "" if math.isnan(a) else round(a, 4),
                      **flags} for r, a in enumerate(curve, 1)]
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
    except FileNotFoundError:
        raise ConfigError(f"--replot: {path} does not exist (reports written before "
                          "curves.csv was kept cannot be redrawn without their runs)") from None
    except (OSError, KeyError, ValueError) as e:
        raise ConfigError(f"--replot: {path} is not a report's curves.csv ({e})") from None
    for key, by_seed in runs.items():
        cells[key]["curves"] = [by_seed[s] for s in sorted(by_seed)]
    return cells


def _write_csv(path: Path, rows: List[dict]) -> None:
    """``rows`` (dicts with the same keys) as CSV with a header; empty when there are none."""
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    path.write_text(buf.getvalue())


def main(argv=None) -> int:
    from .runtime import quiet_tf_logs
    quiet_tf_logs()                        # before TensorFlow is imported
    p = argparse.ArgumentParser(prog="python -m tff_idp.report",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("table", help="a table config (TOML with a [table] section)")
    p.add_argument("--scale", default=None,
                   help="smoke, laptop or paper: whose results to report (required for a "
                   "table of trained runs, as for run; computed tables: paper)")
    p.add_argument("--report-dir", "--out", dest="out", default=None,
                   help="folder of the report (default <results>/<table>/<scale>/report; "
                   "the same flag as run's)")
    p.add_argument("--output-dir", default=None,
                   help="where the runs' results are (default the table's output_dir)")
    p.add_argument("--only", default=None, metavar="LABELS",
                   help="only these data-set labels (comma-separated, e.g. FMNIST)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="the runs made with run's --set (repeatable; --backend and --device "
                   "are given as --set backend=... here)")
    p.add_argument("--methods", default=None, metavar="NAMES",
                   help="only these of the table's methods (comma-separated registry keys)")
    p.add_argument("--archive", action="store_true",
                   help="also copy the complete runs into the repository's runs/archive/ "
                   "(harness.archive), to commit: a fresh clone then regenerates this report "
                   "and resumes the table from them")
    p.add_argument("--replot", action="store_true",
                   help="only redraw convergence.png in the report's folder (the default "
                   "one or --report-dir) from its curves.csv; the runs' results are not read")
    args = p.parse_args(argv)
    from .runtime import StopRequests, StoppedInStartUp
    with StopRequests() as stop:
        try:
            with stop.immediately():      # a report has nothing to checkpoint: stop at once
                return _report(args)
        except StoppedInStartUp:
            print(f"stopped ({'Ctrl-C' if stop.signum == signal.SIGINT else 'SIGTERM'}); the "
                  "report was not written", file=sys.stderr)
            return stop.exit_status


def _report(args) -> int:
    """``main`` after its arguments: validate, collect, write (and archive)."""
    try:
        spec = only_methods(only_datasets(load_table(args.table), args.only), args.methods)
        spec = with_overrides(spec, args.overrides)
        if args.scale is None and spec.kind != "train":    # computed: no scale of runs
            args.scale = "paper"
        args.scale = require_scale(args.scale)
        units = expand(spec, args.scale, args.output_dir)
        if args.archive:
            from .harness.archive import archive_root
            if archive_root(spec) is None:
                raise ConfigError(f"--archive: {args.table} is not under a folder named runs/ "
                                  "(the archive is runs/archive/)")
        if args.replot:
            out = report_dir(spec, args.scale, args.output_dir, args.out or None)
            cells = cells_from_curves(out / CURVES, spec)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.replot:
        path = plot_convergence(spec, cells, out / "convergence.png", args.scale)
        if path is None:
            print(f"error: {out / CURVES} has no curve of {spec.name}", file=sys.stderr)
            return 1
        print(path)
        return 0
    if spec.kind == "train":                # archived runs stand in for missing folders
        from .harness.reuse import reuse_equal_runs
        from .harness.runner import pending
        reuse_equal_runs(spec, args.scale, pending(units), args.output_dir)
    if spec.kind == "train" and not any(unit_complete(u) for u in units):
        print(f"error: no run of {spec.name} at scale {args.scale} is complete under "
              f"{spec.out_root(args.scale, args.output_dir)}; nothing to report (train them: "
              f"python -m tff_idp.run {args.table} --scale {args.scale})", file=sys.stderr)
        return 1
    path = write_report(spec, args.scale, Path(args.out) if args.out else None,
                        args.output_dir)
    print(path)
    if args.archive:
        from .harness.archive import archive_root, archive_runs
        written = archive_runs(spec, args.scale, units, args.output_dir)
        print(f"archived {len(written)} run(s) in {archive_root(spec) / spec.name}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
