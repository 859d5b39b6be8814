"""Per-round noise against signal of each private method of a table, from its plans alone
(no data, no training): how far the noise added to the model update each round is from the
largest update the clients can move it by.

The server's update (GDPFed Algorithm 1, lines 13-19; ``tff_idp.aggregators.group_gaussian``)
is sum_m w_m Top_k(S_m + N(0, s_m^2 I)) / r_m, with S_m group m's sum of clipped updates,
s_m = sigma_m C_m, r_m its expected cohort and w_m its weight. Per coordinate its noise has
variance sum_m (w_m s_m / r_m)^2 (k_m/d) (Top_k keeps k_m/d of the coordinates), so its norm
is about sqrt(d sum_m (w_m s_m / r_m)^2 (k_m/d)) over the model's d parameters. The update's
norm is at most sum_m w_m C_m (every client's clipped update of norm C_m, all aligned). Their
ratio is printed; the noise is as calibrated, so the ratio is the paper's setting's too.
PFA's public rows (each with its group's noise) and IDP-FedAvg's adaptive clip are not
modelled: their rows say so.

    python scripts/noise_to_signal.py runs/gdpfed/ablations/shakespeare-table2-seed0.toml
    python scripts/noise_to_signal.py runs/gdpfed/table2.toml --only FMNIST
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def noise_and_signal(plan, num_params: int):
    """(noise norm per round, largest update norm) of one method's plan (formula above)."""
    var = sum((w * s / r) ** 2 * k for w, s, r, k in
              zip(plan.weights, plan.noise_stddevs, plan.expected_cohorts, plan.keep_fractions))
    signal = sum(w * c for w, c in zip(plan.weights, plan.clips))
    return math.sqrt(num_params * var), signal


def _ratio(r: float) -> str:
    """Three significant digits (7.37 against 8.21 is the comparison a table may turn on),
    never in e-notation."""
    return f"{r:.3g}" if r < 1000 else f"{r:.0f}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("table", help="a table config under runs/")
    p.add_argument("--only", default=None, help="only these data-set labels (comma list)")
    args = p.parse_args(argv)
    from tff_idp.runtime import quiet_tf_logs
    quiet_tf_logs()
    from tff_idp import models
    from tff_idp.planning import plan_all
    from tff_idp.harness.table import expand, load_table, only_datasets
    spec = only_datasets(load_table(args.table), args.only)
    print("| data set | method | sigma_m^2 | noise norm a round | largest update norm | ratio |")
    print("|---|---|---|---|---|---|")      # data set: its label, and its column where swept
    sizes = {}
    for unit in expand(spec, "paper"):
        if unit.seed != spec.first_seed:
            continue
        cfg = unit.cfg
        if cfg.model not in sizes:
            sizes[cfg.model] = models.build(cfg.model).count_params()
        _, _, plans = plan_all(cfg)
        plan = plans[unit.method]
        if not plan.private:
            continue
        noise, signal = noise_and_signal(plan, sizes[cfg.model])
        note = ""
        if plan.public_group is not None:
            note = " (public rows' own noise not counted)"
        elif plan.adaptive_clip:
            note = " (at the initial clip)"
        sigma = ", ".join(f"{s * s:.2f}" for s in plan.noise_multipliers)
        where = unit.dataset + (f" / {unit.column}" if unit.column else "")
        print(f"| {where} | {unit.method}{note} | ({sigma}) | {noise:.3g} | "
              f"{signal:.3f} | {_ratio(noise / signal)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
