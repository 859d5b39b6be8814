"""Seconds the privacy accounting takes where runs wait on it: an RDP curve of the
Poisson-sampled Gaussian (the 35 rates and noise multipliers of tests/privacy/
test_rdp_series.py, on dp-accounting's default orders and on the calibration's fast ones),
an RDP curve of a fixed-size cohort (sampling without replacement), and three plans: paper
004's Table I on Fashion-MNIST (SAMPLE's calibration of three groups over 420 rounds) and
GDPFed and DP-FedAvg with the fixed cohorts of tests/privacy/test_conformance.py. Prints
JSON (each time with the plan's noise multipliers, to compare two commits' numbers too):

    python scripts/accounting_cost.py [--repeats 3]

Run it from two clones (``cd`` into each: ``python`` puts the script's folder, not the
clone, first on the path, so set ``PYTHONPATH=.``) to compare commits."""
import argparse
import json
import time


def _best_of(repeats, fn):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3, help="timings per item; the best is kept")
    args = p.parse_args()
    if args.repeats < 1:
        p.error(f"--repeats={args.repeats}: at least 1")
    from dp_accounting.rdp import rdp_privacy_accountant
    from tff_idp.algorithms.plan import PrivacySetting
    from tff_idp.methods import PLANNERS
    from tff_idp.privacy import accounting, rdp_series

    orders = rdp_privacy_accountant.DEFAULT_RDP_ORDERS
    grid = [(q, s) for q in (1e-5, 1e-3, 0.01, 0.08, 0.3, 0.6, 0.95)
            for s in (0.3, 0.84, 1.5, 4.0, 20.0)]

    def poisson_curves():
        for q, s in grid:
            rdp_series.poisson_gaussian_rdp(q, s, orders)
            rdp_series.poisson_gaussian_rdp(q, s, accounting.FAST_RDP_ORDERS)

    def wor_curve():
        acc = accounting.make_accountant("rdp", "fixed")
        acc.compose(accounting.training_event(2.0, 0.1, 30, sampling="fixed", population=250))
        return acc.get_epsilon(1e-5)

    table1 = PrivacySetting(budgets=[1.0, 2.0, 3.0], group_sizes=[1827, 1252, 304],
                            delta=1e-4, rounds=420, expected_rate=0.008867868755542418,
                            clip=0.1)
    fixed = PrivacySetting(budgets=[0.5, 1.5, 3.0], group_sizes=[250, 167, 83],
                           delta=accounting.default_delta(500), rounds=30, expected_rate=0.1,
                           clip=1.0, sampling="fixed")
    report = {}
    seconds, _ = _best_of(args.repeats, poisson_curves)
    report["poisson_curve_ms"] = round(1000 * seconds / len(grid), 2)
    seconds, eps = _best_of(args.repeats, wor_curve)
    report["fixed_cohort_curve_ms"] = {"ms": round(1000 * seconds, 1), "epsilon": eps}
    for name, setting, method in [("table1_idp_sample_plan", table1, "idp_sample"),
                                  ("fixed_gdpfed_plan", fixed, "gdpfed"),
                                  ("fixed_dp_fedavg_plan", fixed, "dp_fedavg")]:
        seconds, plan = _best_of(1, lambda: PLANNERS[method](setting, local_lr=0.1,
                                                             local_steps=5))
        report[name] = {"seconds": round(seconds, 3),
                        "noise_multipliers": [float(z) for z in plan.noise_multipliers]}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
