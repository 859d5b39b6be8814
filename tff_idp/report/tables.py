"""A report's tables as Markdown: the paper's table with our numbers beside its own, the
computed noise, rates and bounds tables, the observers', cost and audit sections."""
from __future__ import annotations

import dataclasses
import math
from typing import Dict, List

import numpy as np

from ..harness import bounds as bounds_mod
from ..harness.table import TableSpec, expand
from .runs import DIAGNOSTIC_ROUNDS, SIMULATED, mean_std


def second_metric_table(spec, cells, key: str, heading: str, text: str) -> List[str]:
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


def diagnostics_section(cells: Dict[tuple, dict]) -> List[str]:
    """A report section of the client statistics measured in the simulator only (the
    ``sim_`` columns of runs with ``simulation_diagnostics``: never sent by a private run),
    one row per run: each column's mean over its last rounds; none when no run has them."""
    runs = [(k, seed, d) for k, c in cells.items()
            for seed, d in sorted(c.get("diagnostics", {}).items())]
    if not runs:
        return []
    columns = sorted({name for _, _, d in runs for name in d})
    rows = [[ds, col or "", method, str(seed)] +
            [f"{d[name]:.3g}" if name in d and not math.isnan(d[name]) else "-"
             for name in columns] for (ds, col, method), seed, d in runs]
    return ["## Client statistics measured in the simulator only", "",
            "Each run's mean over its last " + str(DIAGNOSTIC_ROUNDS) + " rounds of the "
            "statistics its clients compute before any noise (metrics.csv's `" + SIMULATED +
            "` columns, written with `simulation_diagnostics = true`): a private run never "
            "sends them, so they describe the training, not what any observer sees.", "",
            markdown(["dataset", "column", "method", "seed"] +
                     [name[len(SIMULATED):] for name in columns], rows), ""]


def observer_rows(cells: Dict[tuple, dict]) -> List[dict]:
    """Per cell with a ledger, the privacy plan that gives its epsilons (each group's
    sampling rate q_m and squared noise multiplier sigma_m^2, GDPFed Alg. 1, and the noise
    magnitude Lambda, GDPFed Table III, where the method defines it: ``plan_text``) and each
    observer's epsilon per group, the largest over its complete runs
    (``tff_idp.privacy.threat_model``): those who see the released models (amplified, what
    the budgets are checked against) and the server (no amplification; none where the server
    drew the noise)."""
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
            "sampling": sampling_text(c["observers"]),
            "budgets": " / ".join(f"{c['observers'][0]['groups'][g]['budget']:g}"
                                  for g in groups),
            **plan_text(c["plans"]),
            "eps_model_viewers": " / ".join(f"{e:.3g}" for e in worst("realised_epsilon")),
            "eps_server": "none (server-drawn noise)" if drawn_by_server else
            "not recorded" if any(math.isnan(e) for e in server) else
            " / ".join(f"{e:.3g}" for e in server),
            "budgets_met_against": "; ".join(sorted({
                p["guarantee"].get("budget_met_against", "") for p in c["observers"]}))
            + (" †" if c["not_covered"] else "")})
    return out


SAMPLING_TEXT = {"poisson": "Poisson (add/remove one)",
                 "fixed": "fixed, without replacement (replace one)"}


def sampling_text(privacy_blocks: List[dict]) -> str:
    """How a cell's cohorts were drawn (the summaries' ``privacy.sampling``,
    :mod:`tff_idp.sampling`) with the neighbouring relation it is accounted for; "differs
    by seed" where its runs disagree, "not recorded" for a summary without it."""
    shown = {SAMPLING_TEXT.get(p.get("sampling"), "not recorded") for p in privacy_blocks}
    return shown.pop() if len(shown) == 1 else "differs by seed"


def personalised_not_private(privacy: dict) -> bool:
    """Whether a local-DP run (MS-PAFL) keeps a private half that no noise touches: its
    summary names the personalised-model observer (from issue 75 on), or, in runs made
    before, says its table epsilon does not cover the private half."""
    g = privacy.get("guarantee", {})
    return "personalised_model_viewers" in g.get("observers", {}) or \
        g.get("table_epsilon_covers") is False


def local_dp_observer_rows(cells: Dict[tuple, dict]) -> List[dict]:
    """Per MS-PAFL / LDP-FedAvg cell (record-level local DP, paper 002): the bound that
    holds against the server and everyone who sees an upload or the global model (the
    covering epsilon: every upload a Gaussian release, no amplification; the largest
    client's, the largest over the seeds), the paper's Theorem 4 as printed beside it, and
    the personalised-model viewers: "not private" where a private half is kept
    (``methods.mspafl.observers``)."""
    out = []
    for (ds, col, method), c in cells.items():
        if not c.get("local_dp"):
            continue
        worst = max(c["local_dp"], key=lambda p: p["covering_epsilon_max"])
        out.append({
            "dataset": ds, "column": col or "", "method": method,
            "relation": "replace one record of one client's data",
            "eps_server_and_global_model_viewers": worst.get(
                "server_epsilon_text", f"{worst['covering_epsilon_max']:.3g}"),
            "thm_4_as_printed": worst.get("table_epsilon", "-"),
            "eps_personalised_model_viewers": "not private" if any(
                personalised_not_private(p) for p in c["local_dp"])
            else "no personalised model (the global model's)"})
    return out


def plan_text(plans: List[dict]) -> dict:
    """A cell's privacy plan as the report prints it: rates (%) and sigma^2 per group, and
    Lambda where the method defines it ("-" where not). The plan is calibrated from the
    config alone, so every seed's is the same; "differs by seed" where the summaries say
    otherwise (runs made by different code), never one seed's shown as the cell's."""
    def text(plan: dict) -> dict:
        lam = plan.get("noise_magnitude")
        return {"rates_%": " / ".join(f"{100 * q:.3g}" for q in plan.get("rates", [])) or "-",
                "sigma^2": " / ".join(f"{s:.3g}" for s in plan.get("noise_multipliers_sq", []))
                or "-",
                "Lambda": "-" if lam is None else f"{lam:.3g}"}
    shown = [text(p) for p in plans]
    if not shown:
        return {"rates_%": "-", "sigma^2": "-", "Lambda": "-"}
    return {k: v if all(s[k] == v for s in shown) else "differs by seed"
            for k, v in shown[0].items()}


def _fmt_cell(mean, std, paper, seeds: int = 2, failed: int = 0) -> str:
    if mean is None:
        ours = "failed" if failed else "missing"
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
                         len(c["acc"]) if c else 0, c.get("failed", 0) if c else 0)
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
    return markdown(head, body), rows_csv


def markdown(head, body) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(x) for x in row) + " |" for row in body]
    return "\n".join(out)


def noise_table(spec: TableSpec):
    """sigma per group and Lambda of every (data set, method), at the paper's settings."""
    from ..experiment_config import from_mapping, validate
    from ..planning import plan_all, plan_summary
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
    return markdown(head, body), rows_csv


def rates_sweep(spec: TableSpec):
    """Problem-1 rates for every epsilon_1 of ``rates_sweep`` (Figure 1): {dataset: (eps1
    values, rates array [len(eps), M])}."""
    from ..experiment_config import from_mapping, validate
    from ..data import assign_groups
    from ..privacy import gdpfed
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
    text = markdown(head, body)
    if any("total_delta" in r for r in rows):   # Theorem 4's delta is not the paper's 1e-4
        body = [[c] + [f"{r['total_delta']:.3g}" for r in rows if r["curve"] == c]
                for c in curves]
        text += "\n\nTotal delta of each point (T delta_c + delta~, Theorem 4):\n\n" + \
            markdown(head, body)
    return text


def where_trained(cells) -> str:
    """The processes and machines that trained the complete runs' rounds, by kind of machine
    (``engine.segments``; runs made before segments were kept count as not recorded)."""
    from ..engine.segments import summarise
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
    from ..harness import cost
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


def audit_verdict(bound: dict, audit: dict) -> str:
    """The verdict of one observer's bound on the ledger's epsilon, recomputed from the
    stored bound, canary count, delta and confidence by today's rule
    (``tff_idp.audit.bounds.verdict``: "no leak detected" needs the power at twice the
    claim), so that a run audited under an older rule is not reported by it; "-" where the
    run is not private or was audited before the union bound (no ceiling recorded)."""
    from ..audit import bounds
    ledger = audit.get("ledger_epsilon")
    if not isinstance(ledger, (int, float)) or "ceiling" not in bound:
        return "-"
    return bounds.verdict_words(bounds.verdict(bound["epsilon"], ledger, audit["canaries"],
                                               audit["delta"], audit["confidence"]))


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
                row[f"{name}: verdict"] = audit_verdict(bound, a)
                row[f"{name}: correct / guesses"] = f"{bound['correct']} / {bound['guesses']}"
            row["audit s"] = f"{a.get('seconds', math.nan):.0f}"
            out.append(row)
    return out
