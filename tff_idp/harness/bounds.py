"""Computed figures of privacy bounds (no training): a table of ``kind = "bounds"`` evaluates
one of MS-PAFL's closed forms (``tff_idp.privacy.mspafl``) over an x-axis, one curve per value
of another key, and writes the points as CSV and a PNG plot (paper 002, Figures 3-6).

Its ``[bounds]`` section::

    [bounds]
    quantity = "global_epsilon"    # "round_epsilon" (Cor. 1), "global_epsilon" (Thm. 4),
                                   # "client_epsilon" (Thm. 3) or "client_epsilon_rdp"
    x = "rounds"                   # the x-axis: "rounds", "local_epsilon", ...
    x_values = [10, 50, 100]
    curves = "expected_rate"       # one curve per value of this key ...
    curve_values = [0.1, 0.5, 1.0]
    compare = ["wr", "baseline"]   # optional extra curves: the same with data_sampling
                                   # "wr", the no-amplification baseline (Fig. 5)
    examples_per_client = 325      # |D_i|

Keys of a point: the table's ``[base]`` and data-set block (``num_clients``, ``clip``,
``local_epsilon``, ``local_delta``, ``checkin_beta``, ``composition_delta``, ``local_steps``,
``batch_size``, ``data_sampling``, ``expected_rate`` = p, ``rounds``), then the curve's and
the x value. Every assumption stays in the config file, and the plot's caption names it.
"""
from __future__ import annotations

import csv
import dataclasses
from pathlib import Path
from typing import Dict, List, Optional

from ..atomic import atomic_savefig
from ..config import ConfigError
from ..errors import fail as _fail
from ..privacy import mspafl

QUANTITIES = ("round_epsilon", "global_epsilon", "client_epsilon", "client_epsilon_rdp")
KEYS = ("num_clients", "clip", "local_epsilon", "local_delta", "checkin_beta",
        "composition_delta", "local_steps", "batch_size", "data_sampling", "expected_rate",
        "rounds")
DEFAULTS = dict(num_clients=100, clip=1.0, local_epsilon=1.0, local_delta=1e-4,
                checkin_beta=0.25, composition_delta=1e-4, local_steps=5, batch_size=5,
                data_sampling="wor", expected_rate=0.5, rounds=100)
COMPARE = ("wr", "wor", "baseline")


@dataclasses.dataclass(frozen=True)
class BoundsSpec:
    quantity: str
    x: str
    x_values: List[float]
    curves: Optional[str]
    curve_values: List[float]
    compare: List[str]
    examples_per_client: int


def parse(raw: dict) -> BoundsSpec:
    """The ``[bounds]`` section, checked (one-line ConfigError naming the key)."""
    known = {"quantity", "x", "x_values", "curves", "curve_values", "compare",
             "examples_per_client"}
    for k in raw:
        if k not in known:
            _fail(f"bounds.{k}", raw[k], f"unknown key; valid: {', '.join(sorted(known))}")
    if raw.get("quantity") not in QUANTITIES:
        _fail("bounds.quantity", raw.get("quantity"), f"must be one of {', '.join(QUANTITIES)}")
    for axis in ("x", "curves"):
        if raw.get(axis) is not None and raw[axis] not in KEYS:
            _fail(f"bounds.{axis}", raw[axis], f"must be one of {', '.join(KEYS)}")
    if raw.get("x") is None:
        _fail("bounds.x", None, "name the x-axis key")
    xs = raw.get("x_values")
    if not isinstance(xs, list) or not xs:
        _fail("bounds.x_values", xs, "give at least one value")
    curves = raw.get("curve_values", [None]) if raw.get("curves") else [None]
    compare = raw.get("compare", [])
    for c in compare:
        if c not in COMPARE:
            _fail("bounds.compare", c, f"must be one of {', '.join(COMPARE)}")
    n = raw.get("examples_per_client", 325)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        _fail("bounds.examples_per_client", n, "must be a positive integer")
    return BoundsSpec(raw["quantity"], raw["x"], xs, raw.get("curves"), curves, compare, n)


def point(quantity: str, v: Dict, examples: int, variant: str = ""):
    """(value, total delta or None) of ``quantity`` at the config values ``v`` (module
    docstring); ``variant`` "wr"/"wor" overrides the data sampling, "baseline" is Fig. 5's
    no-amplification baseline. The value is None where there is none (RDP with
    replacement); the total delta is Theorem 4's T delta_c + delta~."""
    sampling = variant if variant in ("wr", "wor") else v["data_sampling"]
    q = mspafl.subsample_rate(examples, int(v["local_steps"]), int(v["batch_size"]), sampling)
    p, eps_l, n, rounds = v["expected_rate"], v["local_epsilon"], int(v["num_clients"]), \
        int(v["rounds"])
    if variant == "baseline":
        return mspafl.baseline_client_epsilon(eps_l, rounds, v["local_delta"], v["clip"]), None
    if quantity == "round_epsilon":
        return mspafl.round_epsilon(p, q, eps_l, n, v["checkin_beta"]), None
    if quantity == "global_epsilon":
        e = mspafl.round_epsilon(p, q, eps_l, n, v["checkin_beta"])
        d = mspafl.round_delta(p, q, v["local_delta"], n, v["checkin_beta"])
        return mspafl.global_epsilon(e, d, rounds, v["composition_delta"])
    if quantity == "client_epsilon":
        return mspafl.client_epsilon(q, eps_l, p, rounds, v["local_delta"], v["clip"]), None
    if sampling == "wr":
        return None, None
    sigma = mspafl.local_noise_std(eps_l, v["local_delta"], v["clip"])
    return mspafl.rdp_client_epsilon(sigma, v["clip"], round(p * rounds), v["local_delta"],
                                     "wor", num_examples=examples,
                                     sample_size=int(v["local_steps"]) * int(v["batch_size"])), None


# paper 002's symbols for the config keys and quantities the figures vary
SYMBOLS = {"expected_rate": "p", "batch_size": "b", "local_epsilon": "eps_l",
           "rounds": "T", "local_steps": "Q", "num_clients": "N",
           "round_epsilon": "eps_c^t", "global_epsilon": "eps_c^T", "client_epsilon": "eps_i^T"}
AXES = {"local_epsilon": "eps_l: each upload's local budget (Lemma 1)", "rounds": "T: rounds",
        "round_epsilon": "eps_c^t: global model, per round (Cor. 1)",
        "global_epsilon": "eps_c^T: global model, T rounds (Thm. 4)",
        "client_epsilon": "eps_i^T: one client, T rounds (Thm. 3)"}


def _curve_label(spec: BoundsSpec, v: Dict, c) -> str:
    """The curve in the paper's symbols: "p = 0.5"; a batch size also as its data sampling
    rate q = Q b / |D_i| (WOR), the symbol Figure 3(b)'s caption uses."""
    symbol = SYMBOLS.get(spec.curves, spec.curves)
    if spec.curves == "batch_size":
        q = int(v["local_steps"]) * int(c) / spec.examples_per_client
        return f"b = {c:g} (q = {q:.2g})"
    return f"{symbol} = {c:g}"


def compute(spec: BoundsSpec, values: Dict) -> List[Dict]:
    """Every point: rows of (curve, x, quantity value, total delta where Theorem 4 has one)."""
    base = {**DEFAULTS, **{k: values[k] for k in KEYS if k in values}}
    rows = []
    for c in spec.curve_values:
        for variant in [""] + list(spec.compare):
            if variant == "baseline" and c != spec.curve_values[0]:
                continue                          # the baseline does not depend on the curve
            for xv in spec.x_values:
                v = dict(base)
                if spec.curves:
                    v[spec.curves] = c
                v[spec.x] = xv
                label = ("no amplification (baseline)" if variant == "baseline" else
                         (_curve_label(spec, v, c) if spec.curves else
                          SYMBOLS.get(spec.quantity, spec.quantity))
                         + (f", {variant.upper()}" if variant else
                            ", WOR" if spec.compare else ""))
                value, delta = point(spec.quantity, v, spec.examples_per_client, variant)
                row = {"curve": label, spec.x: xv, spec.quantity: value}
                if delta is not None:
                    row["total_delta"] = delta
                rows.append(row)
    return rows


def write(spec: BoundsSpec, rows: List[Dict], out: Path, title: str, caption: str) -> List[Path]:
    """CSV of the points and a PNG plot (one line per curve)."""
    out.mkdir(parents=True, exist_ok=True)
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(out / "bounds.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fields)
        w.writeheader()
        w.writerows(rows)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for label in dict.fromkeys(r["curve"] for r in rows):
        pts = [(r[spec.x], r[spec.quantity]) for r in rows
               if r["curve"] == label and r[spec.quantity] is not None]
        if pts:
            ax.plot(*zip(*pts), marker="o", ms=3, label=label)
    ax.set_xlabel(AXES.get(spec.x, spec.x))
    ax.set_ylabel(AXES.get(spec.quantity, spec.quantity.replace("_", " ")))
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    import textwrap
    lines = textwrap.wrap(caption, 150)
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=6, va="bottom")
    fig.tight_layout(rect=(0, 0.03 + 0.022 * len(lines), 1, 1))
    png = out / "bounds.png"
    atomic_savefig(fig, png, dpi=130)
    plt.close(fig)
    return [out / "bounds.csv", png]
