"""A paper's claims about its methods, checked on our runs: the ``[[claims]]`` of a table
config, each an ordering of cells that the report says holds or not, with the evidence.

Used where the paper's numbers are not targets (another data set, another model: paper 001
and 002 on Fashion-MNIST), so what can be tested is what the paper's text says about the
methods' order, e.g. "DP-pFedDSU at or above CENTAUR" or "accuracy rises with p".

A claim in TOML::

    [[claims]]
    text = "DP-pFedDSU at or above CENTAUR"         # what the paper says
    paper = "Table II, EMNIST s=5: 81.80 vs 81.11"   # the paper's evidence (optional)
    cells = ["FMNIST s=5 / centaur", "FMNIST s=5 / dp_pfeddsu"]
    order = "increasing"                             # or "decreasing"
    statistic = "final"                # or "averaged_final", "client_final", "late_spread"

A cell is "dataset / method" or "dataset / column / method" (the table's labels). The
statistic per run: ``final`` is the reported accuracy (the table's number);
``averaged_final`` the last accuracy of paper 002's averaged model on the whole test set
(a method without a personal part: its model's, which is the same thing);
``client_final`` the last accuracy on each client's own test examples, mean over clients
(a personalised method's reported accuracy; a global model's ``client_test_accuracy``,
``Method.client_tests``), so personalised and global methods compare like for like;
``late_spread`` is the standard deviation of the round-to-round changes of the accuracy
curve over the second half of training (in points; lower is steadier: paper 002's "more
stable").

Verdict, for each consecutive pair (a, b) of ``cells`` with d = mean(b) - mean(a) for
"increasing" (a - b for "decreasing") and SE its standard error over the seeds: of the
mean seed-by-seed difference when both cells ran the same seeds (a seed draws the same
check-ins, noise and data order: common random numbers), else sqrt(s_a^2 / n_a +
s_b^2 / n_b) (sample standard deviations): every d > 2 SE: **holds**; every d > 0, some within
2 SE: **holds on the means, within the seed noise**; some d < -2 SE: **does not hold**;
otherwise **reversed on the means, within the seed noise**. A pair with a cell of one seed
has no SE: it is judged by its sign alone (d <= 0: does not hold), the other pairs as
above, and the verdict says "(1 seed)". A cell with no complete run: **not run**.

Nothing here imports TensorFlow.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

ORDERS = ("increasing", "decreasing")
STATISTICS = ("final", "averaged_final", "client_final", "late_spread")
CLAIM_KEYS = {"text", "paper", "cells", "order", "statistic"}

HOLDS = "holds"
HOLDS_WITHIN_NOISE = "holds on the means, within the seed noise"
REVERSED_WITHIN_NOISE = "reversed on the means, within the seed noise"
FAILS = "does not hold"
NOT_RUN = "not run"
ONE_SEED = "(1 seed)"          # after a verdict: a one-seed pair, judged by its sign


@dataclasses.dataclass(frozen=True)
class Claim:
    text: str
    cells: Tuple[Tuple[str, Optional[str], str], ...]   # (dataset, column or None, method)
    order: str = "increasing"
    statistic: str = "final"
    paper: str = ""


def parse(raw, datasets: Sequence[str], columns: Sequence[str], methods: Sequence[str],
          fail) -> List[Claim]:
    """The ``[[claims]]`` list of a table config; ``fail(key, value, why)`` raises the
    one-line config error."""
    if not isinstance(raw, list):
        fail("claims", raw, "must be an array of tables ([[claims]])")
    out = []
    for n, c in enumerate(raw):
        key = f"claims[{n}]"
        if not isinstance(c, dict):
            fail(key, c, "must be a table with text, cells, order")
        unknown = sorted(set(c) - CLAIM_KEYS)
        if unknown:
            fail(f"{key}.{unknown[0]}", c[unknown[0]],
                 f"unknown key; valid: {', '.join(sorted(CLAIM_KEYS))}")
        if not isinstance(c.get("text"), str) or not c["text"]:
            fail(f"{key}.text", c.get("text"), "must be a non-empty string")
        order = c.get("order", "increasing")
        if order not in ORDERS:
            fail(f"{key}.order", order, f"must be one of {', '.join(ORDERS)}")
        statistic = c.get("statistic", "final")
        if statistic not in STATISTICS:
            fail(f"{key}.statistic", statistic, f"must be one of {', '.join(STATISTICS)}")
        cells = c.get("cells")
        if not isinstance(cells, list) or len(cells) < 2:
            fail(f"{key}.cells", cells, "must list at least two cells to order")
        refs = []
        for ref in cells:
            parts = [p.strip() for p in str(ref).split("/")]
            if len(parts) == 2:
                ds, col, method = parts[0], None, parts[1]
            elif len(parts) == 3:
                ds, col, method = parts
            else:
                fail(f"{key}.cells", ref, "a cell is 'dataset / method' or "
                     "'dataset / column / method'")
            if ds not in datasets:
                fail(f"{key}.cells", ref, f"no data set {ds!r} in this table")
            if (col is None) != (not columns) or (col is not None and col not in columns):
                fail(f"{key}.cells", ref, f"no column {col!r} in this table"
                     if col is not None else "this table has columns: name one")
            if method not in methods:
                fail(f"{key}.cells", ref, f"no method {method!r} in this table")
            refs.append((ds, col, method))
        out.append(Claim(c["text"], tuple(refs), order, statistic, str(c.get("paper", ""))))
    return out


def late_spread(curve: Sequence[float]) -> float:
    """Standard deviation (points) of the round-to-round changes of an accuracy curve (%)
    over its second half: how much the curve jitters late in training. Rounds not evaluated
    (nan) are skipped."""
    v = np.asarray([x for x in curve[len(curve) // 2:] if not math.isnan(x)], float)
    if v.size < 3:
        return math.nan
    return float(np.std(np.diff(v), ddof=1))


def values(cell: dict, statistic: str) -> Dict[int, float]:
    """Per complete run of a report cell (``report.collect``) the claim's statistic, by
    seed."""
    seeds = cell.get("seeds") or list(range(len(cell["acc"])))
    if statistic == "final":
        return dict(zip(seeds, cell["acc"]))
    if statistic == "averaged_final":
        if cell.get("metric", "test_accuracy") == "test_accuracy":   # no personal part: its
            return dict(zip(seeds, cell["acc"]))     # one model is the averaged model
        return dict(cell.get("averaged", {}))
    if statistic == "client_final":
        if cell.get("metric", "test_accuracy") != "test_accuracy":   # personalised: its own
            return dict(zip(seeds, cell["acc"]))
        return dict(cell.get("client", {}))
    spreads = dict(zip(seeds, (late_spread(c) for c in cell["curves"])))
    return {seed: v for seed, v in spreads.items() if not math.isnan(v)}


def _pair(a: Dict[int, float], b: Dict[int, float], order: str):
    """(d, 2 SE or None, {seed: difference} or None) for the pair (a, b) under ``order``.
    Cells run with the same seeds are compared seed by seed (the same seed draws the same
    check-ins, noise and data order for a method: common random numbers), SE that of the
    mean paired difference; otherwise SE of the difference of two independent means, and no
    seed-by-seed differences."""
    sign = -1.0 if order == "decreasing" else 1.0
    if set(a) == set(b) and len(a) > 1:
        by_seed = {s: sign * (b[s] - a[s]) for s in sorted(a)}
        diffs = np.array(list(by_seed.values()))
        return (float(diffs.mean()), 2 * float(diffs.std(ddof=1)) / math.sqrt(len(diffs)),
                by_seed)
    va, vb = list(a.values()), list(b.values())
    d = sign * float(np.mean(vb) - np.mean(va))
    if len(va) < 2 or len(vb) < 2:
        return d, None, None
    se = math.sqrt(np.var(va, ddof=1) / len(va) + np.var(vb, ddof=1) / len(vb))
    return d, 2 * se, None


def verdict(pairs: Sequence[tuple]) -> str:
    """The module docstring's rule over the consecutive pairs' (d, 2 SE) (a pair may carry
    more, e.g. :func:`_pair`'s seed-by-seed differences, which the rule does not read)."""
    one_seed = [p[0] for p in pairs if p[1] is None]      # no SE: judged by the sign
    timed = [(p[0], p[1]) for p in pairs if p[1] is not None]
    if any(d < -two_se for d, two_se in timed) or any(d <= 0 for d in one_seed):
        base = FAILS
    elif all(d > two_se for d, two_se in timed):
        base = HOLDS
    elif all(d > 0 for d, _ in timed):
        base = HOLDS_WITHIN_NOISE
    else:
        base = REVERSED_WITHIN_NOISE
    return f"{base} {ONE_SEED}" if one_seed else base


def check(claims: List[Claim], cells: Dict[tuple, dict]) -> List[dict]:
    """One row per claim: the claim, the paper's evidence, ours (mean ± std per cell, in the
    claim's order), the gaps, each seed's gap where the cells ran the same seeds (pairs
    separated by "; "), and the verdict."""
    rows = []
    for claim in claims:
        per_cell = [values(cells.get(ref, {"acc": [], "curves": []}), claim.statistic)
                    for ref in claim.cells]
        unit = " pts late spread" if claim.statistic == "late_spread" else "%"

        def show(v):
            v = list(v.values())
            if not v:
                return "not run"
            sd = f" ± {np.std(v, ddof=1):.2f}" if len(v) > 1 else ""
            return f"{np.mean(v):.2f}{sd}{unit} (n={len(v)})"

        ours = "; ".join(f"{name}: {show(v)}"
                         for name, v in zip(_names(claim.cells), per_cell))
        if any(not v for v in per_cell):
            rows.append({"claim": claim.text, "paper": claim.paper, "ours": ours,
                         "gaps": "", "seed_by_seed": "", "verdict": NOT_RUN})
            continue
        pairs = [_pair(a, b, claim.order) for a, b in zip(per_cell, per_cell[1:])]
        gaps = ", ".join(f"{d:+.2f}" + (f" (2 SE {s:.2f})" if s is not None else "")
                         for d, s, _ in pairs)
        by_seed = "; ".join(", ".join(f"seed {seed} {g:+.2f}" for seed, g in diffs.items())
                            for _, _, diffs in pairs if diffs)
        rows.append({"claim": claim.text, "paper": claim.paper, "ours": ours, "gaps": gaps,
                     "seed_by_seed": by_seed,
                     "verdict": verdict(pairs)})
    return rows


def _names(refs) -> List[str]:
    """The cells' names by the parts in which they differ (data set, column, method)."""
    varying = [i for i in range(3) if len({ref[i] for ref in refs}) > 1] or [2]
    return [" / ".join(ref[i] for i in varying if ref[i] is not None) for ref in refs]
