"""A table's report written into its folder: report.md, report.csv, curves.csv and the
figures, from the complete runs (``tables``, ``figures``, ``runs``)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..harness import bounds as bounds_mod
from ..harness.archive import failed_runs
from ..harness.failures import describe
from ..harness.table import TableSpec, expand
from .figures import plot_convergence, plot_rates
from .runs import AVERAGED, CLIENT, CURVES, write_csv, collect, curve_rows
from .tables import (markdown, second_metric_table, audit_rows, bounds_caption, bounds_table,
                     cost_lines, diagnostics_section, local_dp_observer_rows, noise_table,
                     observer_rows, rates_sweep, train_table)

CLAIMS_HEADING = "## The paper's claims, checked"


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
        missing = [m for c in cells.values() for m in c["missing"]]
        absent = set(missing)
        failed = failed_runs(spec, scale, [u for u in units if u.label in absent], output_dir)
        for u in units:
            if u.label in failed:
                cells[(u.dataset, u.column, u.method)]["failed"] += 1
        compare = scale != "smoke"
        text, rows_csv = train_table(spec, cells, compare)
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
        if failed:
            md += [f"Failed runs ({len(failed)}; each kept its metrics up to its last "
                   "checkpoint: `harness.failures`): " +
                   "; ".join(describe(label, f) for label, f in failed.items()), ""]
        missing = [m for m in missing if m not in failed]
        if missing:
            md += [f"Missing runs ({len(missing)}): " + ", ".join(missing[:20]) +
                   (" ..." if len(missing) > 20 else ""), ""]
        unreadable = [w for c in cells.values() for w in c["unreadable"]]
        if unreadable:
            md += [f"Unreadable runs ({len(unreadable)}, counted as missing): " +
                   "; ".join(f"unreadable: {w}" for w in unreadable), ""]
        md += second_metric_table(
            spec, cells, "averaged", "The averaged model †",
            "Test accuracy (%) at the last round of the model whose private part is the mean "
            f"of every client's, on the whole test set (metrics.csv: `{AVERAGED}`), beside "
            "the personalised accuracy above. † Not private: its private part averages the "
            "clients' personal parts, which no noise touches; an accuracy to compare, not a "
            "release any epsilon covers.")
        md += second_metric_table(
            spec, cells, "client", "The global model on each client's classes",
            "Test accuracy (%) at the last round of the methods' one model on each client's "
            "own test examples (those of the classes it trains on), mean over clients "
            f"(metrics.csv: `{CLIENT}`): like for like with a personalised accuracy above.")
        md += diagnostics_section(cells)
        if spec.claims:
            from ..harness import claims as claims_mod
            checked = claims_mod.check(spec.claims, cells)
            md += [CLAIMS_HEADING, "",
                   "Each claim an ordering of cells, in the order it names them; gap: the "
                   "difference of consecutive cells' means in the claim's direction (positive: "
                   "as claimed), with twice its standard error over the seeds (seed by seed "
                   "where both cells ran the same seeds: a seed draws the same check-ins, "
                   "noise and data order; each seed's gap is listed). Verdict: holds "
                   "(every gap above 2 SE), holds on the means within the seed noise, reversed "
                   "on the means within the seed noise, does not hold (a gap below -2 SE), "
                   "not run (`tff_idp/harness/claims.py`).", "",
                   markdown(["Claim", "Paper", "Ours", "Gap", "Seed by seed", "Verdict"],
                             [list(r.values()) for r in checked]), ""]
            write_csv(out / "claims.csv", checked)
        privacy = observer_rows(cells)
        if privacy:
            md += ["## Privacy, by observer", "",
                   "The plan that gives the epsilons, per privacy group: the sampling rate "
                   "q_m (%) and the squared noise multiplier sigma_m^2 (the noise's std on "
                   "the group's sum over the clip; GDPFed Alg. 1), and the noise magnitude "
                   "Lambda (GDPFed Table III; - where the method defines none). "
                   "Epsilon per privacy group at the run's delta, the largest over the seeds. "
                   "sampling: how each round's cohort was drawn (Poisson: each client of "
                   "group m with probability q_m, accounted for adding or removing one "
                   "client; fixed: r_m = round(q_m |G_m|) clients of group m without "
                   "replacement, GDPFed Alg. 1 line 4, accounted for replacing one). "
                   "Model viewers: that neighbouring relation, amplified by the "
                   "sampling of clients, which is secret from them; the budgets are checked "
                   "against this one. Server: the largest client's composition of its "
                   "participations' Gaussian releases, without amplification (the server "
                   "draws the cohort), under secure aggregation of client-drawn noise.", "",
                   markdown(list(privacy[0]), [list(r.values()) for r in privacy]), ""]
        local_dp = local_dp_observer_rows(cells)
        if local_dp:
            md += ["## Privacy, by observer" if not privacy else
                   "### Record-level local DP, by observer", "",
                   "MS-PAFL and LDP-FedAvg (paper 002): replace one record of one client's "
                   "data; each client draws the full sigma on its own upload. The server and "
                   "everyone who sees an upload or the global model (its public part): the "
                   "covering epsilon, each upload a Gaussian release composed over the "
                   "client's participations without amplification (the largest client's, the "
                   "largest over the seeds), with the paper's Theorem 4 as printed beside it. "
                   "Whoever sees a client's personalised model sees its private half too, "
                   "trained on the client's records and never clipped or noised: not "
                   "private. The averaged model (every client's private half averaged) is "
                   "not private either (docs/mspafl.md).", "",
                   markdown(list(local_dp[0]), [list(r.values()) for r in local_dp]), ""]
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
                   "it claims. The verdict 'no leak detected' needs the power to see a leak: "
                   "a true epsilon of twice the claim detected with probability 0.8 (ideal "
                   "Gaussian canaries at this delta and canary count); otherwise it is "
                   "'cannot detect', with the smallest true epsilon detected with probability "
                   "0.8 (docs/audit.md). Runs audited before the union bound (no max "
                   "recorded) state the best of five counts each at 95%, about 88% "
                   "family-wise. Canaries are not in the accuracy; their runs are not the "
                   "plain table's (docs/audit.md).", "",
                   markdown(list(audits[0]), [list(r.values()) for r in audits]), ""]
        md += ["## Cost", ""] + cost_lines(spec, cells, scale)
        write_csv(out / CURVES, curve_rows(cells))
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
            md += [f"### {ds}", "", markdown(head, body), ""]
            for e, r in zip(eps, rates):
                rows_csv.append({"dataset": ds, "epsilon_1": e,
                                 **{f"q{g + 1}_%": round(100 * q, 4) for g, q in enumerate(r)}})
        figures.append(plot_rates(spec, sweep, out / "rates.png"))
    for f in figures:             # every figure is written under out
        md += ["", f"![{f.stem}]({f.relative_to(out)})"]
    (out / "report.md").write_text("\n".join(md) + "\n")
    write_csv(out / "report.csv", rows_csv)
    return out / "report.md"


def main_table(report_md: str) -> str:
    """The report's first table (the results, ours beside the paper's) with the line that says
    how to read it, and its table of the paper's claims where it checks some, for the
    terminal: printed by ``run`` at the end of a table run and by ``report``."""
    lines = report_md.splitlines()
    first = next((i for i, l in enumerate(lines) if l.startswith("|")), None)
    if first is None:
        return ""
    head = next((l for l in reversed(lines[:first]) if l.startswith("Scale `")), None)
    if head is None:                       # a computed table: the paragraph above it
        head = next((l for l in reversed(lines[:first]) if l.strip()), "")
    out = ([head, ""] if head else []) + _table_from(lines, first)
    claims = next((i for i, l in enumerate(lines) if l == CLAIMS_HEADING), None)
    if claims is not None:
        at = next(i for i in range(claims, len(lines)) if lines[i].startswith("|"))
        out += ["", CLAIMS_HEADING.lstrip("# ") + ":", ""] + _table_from(lines, at)
    return "\n".join(out)


def _table_from(lines: list, start: int) -> list:
    """The Markdown table whose first line is ``lines[start]``."""
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")),
               len(lines))
    return lines[start:end]
