"""A report's figures as PNG: convergence curves (one panel per data set, the paper's final
values in a strip at the right) and Problem-1 rates against epsilon_1."""
from __future__ import annotations

import textwrap
import warnings
from pathlib import Path
from typing import Dict, Optional

import numpy as np

from ..atomic import atomic_savefig
from ..harness.table import TableSpec
from .runs import read_run


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
    from ..methods import paper_name
    datasets = list(spec.datasets)
    columns = spec.axis.labels if spec.axis else [None]
    groups = (spec.axis.panels if spec.axis else None) or {"": columns}
    layout = [part for ds in datasets for title, members in groups.items()
              for part in _split_panel(f"{ds}: {title}" if title else ds, ds,
                                       [(col, m) for col in members
                                        for m in spec.methods_of(ds, col)])]
    ncols = min(3, len(layout))
    nrows = -(-len(layout) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(6.4, 4.4 * ncols), 3.6 * nrows + 0.6),
                             squeeze=False)
    panels = list(axes.flat)
    for ax in panels[len(layout):]:
        ax.set_visible(False)
    drawn, synthetic, banded, seeds, reported = False, False, False, set(), False
    palette, colors = plt.rcParams["axes.prop_cycle"].by_key()["color"], {}
    for ax, (ds, panel_title, pairs) in zip(panels, layout):
        metrics, last_round, stars = set(), 0, []
        for col, m in pairs:
            c = cells.get((ds, col, m))
            if not c or not c["curves"]:
                continue
            synthetic |= any("synthetic" in n for n in c["notes"])
            metrics.add(c["metric"])
            label = paper_name(m) if col is None else f"{paper_name(m)}, {col}"
            label += " †" if c["not_covered"] else ""
            if label not in colors:          # one colour per curve label across the panels
                colors[label] = palette[len(colors) % len(palette)]
            line, x = _seed_band(ax, c["curves"], label, markers=True, color=colors[label])
            reported |= _reported_points(ax, c, line.get_color())
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
    for ds in datasets:                 # a data set's panels on one scale, to compare
        same = [ax for ax, (d, _, _) in zip(panels, layout) if d == ds and ax.lines]
        if len(same) > 1:
            low = min(ax.get_ylim()[0] for ax in same)
            high = max(ax.get_ylim()[1] for ax in same)
            for ax in same:
                ax.set_ylim(low, high)
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
    if reported:
        handles.append(_reported_points(None, None, "grey"))
        labels.append("the round a table reports (best validation), per seed")
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


PANEL_CURVES = 5        # a panel with more curves is split into panels of at most 4


def _split_panel(title: str, ds, pairs) -> list:
    """One panel's (dataset, title, [(column, method)]) as it is, or, when it would hold
    more than :data:`PANEL_CURVES` curves, as the fewest panels of at most 4 curves, of even
    sizes, in table order ("title (1/2)", ...): seven curves in one panel cannot be told
    apart."""
    if len(pairs) <= PANEL_CURVES:
        return [(ds, title, pairs)]
    count = -(-len(pairs) // 4)
    bounds = [round(i * len(pairs) / count) for i in range(count + 1)]
    return [(ds, f"{title} ({i}/{count})", pairs[a:b])
            for i, (a, b) in enumerate(zip(bounds, bounds[1:]), 1)]


def _reported_points(ax, cell, color) -> bool:
    """Each seed's accuracy at the round its table reports, when that is the round of best
    validation (paper 001's protocol) rather than the last: a hollow diamond on the seed's
    own value, so that a curve that ends lower than its table cell says why. ``ax`` None:
    the legend's marker. Returns whether any point was drawn."""
    style = dict(marker="D", markersize=7, linestyle="none", markerfacecolor="none",
                 markeredgewidth=1.5, color=color)
    if ax is None:
        import matplotlib.lines
        return matplotlib.lines.Line2D([], [], **style)
    points = [(r, curve[r - 1]) for curve, r in zip(cell["curves"],
                                                     cell.get("reported_rounds") or [])
              if r is not None and 0 < r <= len(curve) and np.isfinite(curve[r - 1])]
    if points:
        ax.plot(*zip(*points), **style)
    return bool(points)


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


def _seed_band(ax, curves, label: str, markers: bool = False, color=None):
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
    line, = ax.plot(x[keep], mean[keep], label=label, color=color,
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
    from ..methods import paper_name
    fig, ax = plt.subplots(figsize=(7.2, 4.4))
    metrics, banded, stars, last_round = set(), False, [], 0
    for method, where in folders.items():
        runs = [read_run(f) for f in (where if isinstance(where, (list, tuple)) else [where])]
        s = runs[0][0]
        covered = s.guarantee.get("valid") is not False
        line, x = _seed_band(ax, [curve for _, curve, _ in runs],
                             paper_name(method) + ("" if covered else " †"))
        banded |= len(runs) > 1
        last_round = max(last_round, int(x[-1]))
        paper = (reference or {}).get(method)
        if paper is not None:
            stars.append((paper, line.get_color()))
        metrics.add(s.headline_metric)
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
