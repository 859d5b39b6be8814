"""The Shakespeare local-work figure (docs/gdpfed.md, "Shakespeare: tau as local steps or
local epochs"): P-FedAvg with GDPFed's tau = 30 read as 30 local steps and as 30 local
epochs (runs/gdpfed/ablations/shakespeare-local-work-seed0.toml, its report's curves.csv),
beside the central bound (runs/gdpfed/reports/shakespeare-central/
per-position-batch4-15000-steps.csv: one model trained on the pooled data with the paper's
optimiser, no federation, no noise).

Left: test accuracy by round, with the committed 30-step cell at the paper's cohort and the
paper's P-FedAvg as lines. Right: the same against sequential local steps (a client's steps
in a round: 30, or 30 x ceil(pieces / 4), averaged over the 712 clients since every client
is equally likely in a cohort), the central run's accuracy by step beside them: how far
federated averaging of that much local work lags one model trained for as many steps.

    python scripts/shakespeare_local_work.py     # writes local-work.png and local-work.json
                                                 # into the report's folder
"""
from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
REPORT = ROOT / "runs/gdpfed/reports/shakespeare-local-work-seed0"
CENTRAL = ROOT / "runs/gdpfed/reports/shakespeare-central/per-position-batch4-15000-steps.csv"
PAPER_P_FEDAVG = 60.62           # GDPFed Table II, Shakespeare, P-FedAvg
COMMITTED_30_STEPS = 36.13       # runs/gdpfed/reports/shakespeare-table2-seed0, round 50
READINGS = {"30 local steps": "steps", "30 local epochs": "epochs"}


def curves():
    """{column: [(round, accuracy %)]} of the report's curves.csv (in % there; rounds
    evaluated)."""
    out = {}
    with open(REPORT / "curves.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["accuracy"]:
                out.setdefault(row["column"], []).append((int(row["round"]),
                                                          float(row["accuracy"])))
    return out


def central():
    with open(CENTRAL, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return [(int(r["step"]), 100 * float(r["test_accuracy"])) for r in rows]


def mean_steps_per_round(epochs: int = 30, batch: int = 4) -> float:
    """A client's expected local steps in a round under the epochs reading: the mean over
    the 712 clients of epochs x ceil(pieces / batch)."""
    from tff_idp.data.sources import load_leaf_shakespeare
    data = load_leaf_shakespeare(str(ROOT / "datasets"), True, True)
    return sum(epochs * math.ceil(len(c) / batch) for c in data.clients) / len(data.clients)


def main() -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fed, cen = curves(), central()
    per_round = {"steps": 30.0, "epochs": mean_steps_per_round()}
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.4))
    for column, points in sorted(fed.items()):
        rounds, acc = zip(*points)
        left.plot(rounds, acc, marker="o", label=f"P-FedAvg, {column} (q = 1%)")
        steps = [r * per_round[READINGS[column]] for r in rounds]
        right.plot(steps, acc, marker="o", label=f"P-FedAvg, {column}")
    for ax in (left, right):
        ax.axhline(PAPER_P_FEDAVG, color="k", ls="--", lw=1, label="paper's P-FedAvg (50 rounds)")
    left.axhline(COMMITTED_30_STEPS, color="gray", ls=":", lw=1,
                 label="ours, 30 steps, q = 10%, round 50 (committed)")
    left.axhline(cen[-1][1], color="tab:red", ls="-.", lw=1,
                 label=f"central, {cen[-1][0]:,} steps")
    right.plot(*zip(*cen), color="tab:red", label="central (pooled data, paper's optimiser)")
    right.set_xscale("log")
    left.set_xlabel("round")
    right.set_xlabel("sequential local steps (a client's, expected)")
    for ax in (left, right):
        ax.set_ylabel("test accuracy % (every position)")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.suptitle("Shakespeare: GDPFed's tau = 30 as local steps or local epochs (P-FedAvg, seed 0)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(REPORT / "local-work.png", dpi=110)
    (REPORT / "local-work.json").write_text(json.dumps(
        {"steps_per_round": per_round, "curves": fed, "central_last": cen[-1],
         "command": "python scripts/shakespeare_local_work.py"}, indent=1) + "\n")
    print(REPORT / "local-work.png")


if __name__ == "__main__":
    main()
