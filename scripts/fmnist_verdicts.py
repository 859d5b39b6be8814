"""Print the verdict table of GDPFed's FMNIST cells (Tables II, IV, VI, VII, VIII) from the
committed reports under runs/gdpfed/reports/paper-fmnist/ (same-padding CNN, seeds 0-2):
paper, ours (mean ± std) and difference as each report.md prints them, and a verdict from
its report.csv:

- "within 2 points": |ours - paper| <= 2;
- "within the seed spread": further, but within two standard deviations of our seeds;
- "not reproduced": neither; then *explained* where the README's status table says so
  (runs/status.toml's ``[[row.explained]]``: a committed experiment, linked), *open* where it
  says what was tried and what was not (``[[row.open]]``, linked), else *unexplained*. One
  rule and one list of readings for both tables.

    python scripts/fmnist_verdicts.py            # markdown, pasted into the write-up
"""
import csv
import functools
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tff_idp.report.status import (SPREAD, WITHIN, in_std,  # noqa: E402 (the README's rule)
                                   load_rows)

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "runs" / "gdpfed" / "reports" / "paper-fmnist"
NAMES = {"p_fedavg": "P-FedAvg", "dp_fedavg": "DP-FedAvg", "gdpfed": "GDPFed", "pfa": "PFA",
         "idp_sample": "IDP-FedAvg", "gdpfed_plus": "GDPFed+"}
NAMES_BACK = {v: k for k, v in NAMES.items()}
# (table, report folder holding its cells with the same-padding CNN); Table II's PFA cell
# comes from ablations-table2-baselines, which runs the original's projection under both
# noise readings; ablations-table2-same-padding's own PFA row (the first reading only, since
# its 2026-11-26 rerun) is left out so that the reading is not listed twice
SOURCES = [
    ("II", "ablations-table2-same-padding"),
    ("II", "ablations-table2-baselines"),
    ("IV", "ablations-table4-same-padding"),
    ("VI", "ablations-table6-same-padding"),
    ("VII", "ablations-budget-scale"),
    ("VIII", "ablations-table8-same-padding"),
]
PFA_FULL = "PFA, full public noise, per-layer projection"
PFA_SHARE = "PFA, shared public noise, per-layer projection"
SUPERSEDED = {("II", "", "pfa")}          # same-padding Table II's PFA: listed by baselines


@functools.lru_cache(maxsize=1)          # runs/status.toml read once, not per cell
def readings() -> dict:
    """{(table, method, column): (verdict, text, evidence report)} from the README status
    table's FMNIST rows: its explained gaps (verdict "explained") and open ones ("open"); a
    reading without a column ("") holds for every column of its method."""
    out = {}
    for row in load_rows(REPO / "runs" / "status.toml"):
        if row.data == "FMNIST" and row.what.startswith("Table "):
            table = row.what.split()[1]
            for kind, found in (("explained", row.explained), ("open", row.open)):
                for x in found:
                    out[(table, x.method, x.column)] = (kind, x.text, x.report)
    return out


def reading(table, method, column):
    """The status table's reading of a cell (:func:`readings`), or None."""
    found = readings()
    return found.get((table, method, column), found.get((table, method, "")))


# cells within 2 points that need a word: (table, column, method) -> note
NOTES = {
    ("II", PFA_SHARE, "pfa"): "only with public rows noised by their share, as GDPFed's "
                              "framework does: not private against the server (dagger)",
}


def rows():
    for table, folder in SOURCES:
        with open(ROOT / folder / "report.csv") as f:
            for r in csv.DictReader(f):
                if (table, r["column"], r["method"]) in SUPERSEDED:
                    continue
                if folder == "ablations-table2-baselines" and r["column"] not in (PFA_FULL,
                                                                                   PFA_SHARE):
                    continue              # GDPFed+'s and cnn2's rows are evidence, not cells
                if not r["ours_mean"]:
                    continue
                yield table, folder, r


CELL = re.compile(r"^(\S+ ± \S+) / (\S+) \((\S+)\)")


@functools.lru_cache(maxsize=None)
def report_cells(folder) -> dict:
    """{(row label, column header): (ours, paper, difference)} as the report's own results
    table prints them, so that the write-up quotes the report's cell, not a second rounding
    of report.csv's three decimals (2.235 -> 2.23 where the report, from the runs, prints
    2.24)."""
    lines = (ROOT / folder / "report.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| "))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    out = {}
    for line in lines[start + 2:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        labels = [c for c in cells if not CELL.match(c)]
        for head, cell in zip(header, cells):
            m = CELL.match(cell)
            if m:
                for label in labels:
                    out[(label, head)] = m.groups()
    return out


def quoted(folder, r):
    """The report's printed (ours, paper, difference) of report.csv's row r: its row is the
    method's (or the setting's), its column the swept value's (or the data set's)."""
    cells = report_cells(folder)
    column = r["column"] or r["dataset"]
    for key in ((r["method"], column), (column, r["dataset"])):
        if key in cells:
            return cells[key]
    raise SystemExit(f"error: {folder}/report.md has no cell for {r['method']} at "
                     f"{column!r}")


def verdict(table, r):
    mean, std, paper = float(r["ours_mean"]), float(r["ours_std"]), float(r["paper"])
    diff = mean - paper
    if abs(diff) <= WITHIN:
        return "within 2 points", NOTES.get((table, r["column"], r["method"]), "")
    k = in_std(diff, std, int(r["seeds_done"]))
    if k is not None and k <= SPREAD:
        return "within the seed spread", f"{k:.1f} std"
    found = reading(table, r["method"], r["column"])
    if found is None:
        return "not reproduced, unexplained", ""
    kind, why, report = found
    link = os.path.relpath(REPO / report / "report.md", ROOT)
    return f"not reproduced, {kind}", f"{why} ([evidence]({link}))"


def main() -> int:
    out = ["| table | cell | method | paper | ours (seeds 0-2) | difference | verdict | why |",
           "|---|---|---|---|---|---|---|---|"]
    for table, folder, r in rows():
        v, why = verdict(table, r)
        ours, paper, diff = quoted(folder, r)
        out.append(f"| {table} | {r['column'] or 'FMNIST'} | {NAMES[r['method']]} | "
                   f"{paper} | {ours} | {diff} | {v} | {why} |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
