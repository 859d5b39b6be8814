"""How far Andrew et al.'s one-shot estimate strays on an ideal mechanism (docs/audit.md).

The ideal mechanism at (epsilon, delta): each inserted canary's score is N(mu, 1), each
never-inserted one's N(0, 1), with mu the Gaussian mechanism's noise-to-sensitivity ratio
whose exact epsilon at delta is ``epsilon`` (Balle & Wang's profile). Nothing here is
mis-specified (the scores are Gaussian, their stds equal), so every estimate above epsilon
is the estimator's own sampling error: the fitted standard deviations' ratio, which moves the
tails' privacy loss quadratically. Per setting (the audited runs' canary counts and deltas)
and seed (0..seeds-1), both of the audit's estimators:

- ``both fitted`` (the every-round observer's: ``tff_idp.audit.bounds.one_shot_epsilon``);
- ``closed-form null`` (the final model's: ``one_shot_epsilon_null`` with the null N(0, 1/d),
  here d = 1 after scaling).

    python scripts/audit_estimator_spread.py            # writes runs/audit/estimator_spread.json

Prints a markdown table: the share of seeds whose estimate exceeds the true epsilon, and the
5th / 50th / 95th percentiles of the estimates.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy import optimize

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tff_idp.audit.bounds import gaussian_pair_delta, one_shot_epsilon, one_shot_epsilon_null  # noqa: E402

# (name, inserted canaries, never inserted, delta): the audited runs of docs/audit.md
SETTINGS = (("digits default (1,000 canaries)", 511, 489, 1.07e-3),
            ("FMNIST Table II cell (1,000 canaries)", 511, 489, 6.98e-5))


def ideal_mu(epsilon: float, delta: float) -> float:
    """The shift whose Gaussian pair N(mu, 1) vs N(0, 1) has exactly (epsilon, delta)."""
    return optimize.brentq(lambda mu: gaussian_pair_delta(epsilon, mu, 1.0, 0.0, 1.0) - delta,
                           1e-4, 50.0)


def spread(n_in: int, n_out: int, delta: float, epsilon: float, seeds: int) -> dict:
    mu = ideal_mu(epsilon, delta)
    fitted, null = [], []
    for seed in range(seeds):
        rng = np.random.default_rng([seed, n_in, n_out])
        a, b = mu + rng.standard_normal(n_in), rng.standard_normal(n_out)
        fitted.append(one_shot_epsilon(a, b, delta))
        null.append(one_shot_epsilon_null(a, 1, delta))
    out = {"mu": mu}
    for name, values in (("both_fitted", fitted), ("closed_form_null", null)):
        v = np.asarray(values)
        out[name] = {"share_above": float(np.mean(v > epsilon)),
                     "p5": float(np.quantile(v, 0.05)), "median": float(np.median(v)),
                     "p95": float(np.quantile(v, 0.95))}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=0.5, help="the ideal mechanism's epsilon")
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--out", type=Path, default=ROOT / "runs/audit/estimator_spread.json")
    args = ap.parse_args(argv)
    results = []
    print("| setting | inserted / never | delta | estimator | share above "
          f"{args.epsilon} | 5% / median / 95% |")
    print("|---|---|---|---|---|---|")
    for name, n_in, n_out, delta in SETTINGS:
        r = spread(n_in, n_out, delta, args.epsilon, args.seeds)
        results.append({"setting": name, "inserted": n_in, "never_inserted": n_out,
                        "delta": delta, **r})
        for key in ("both_fitted", "closed_form_null"):
            s = r[key]
            print(f"| {name} | {n_in} / {n_out} | {delta:.3g} | {key.replace('_', ' ')} | "
                  f"{100 * s['share_above']:.1f}% | {s['p5']:.3g} / {s['median']:.3g} / "
                  f"{s['p95']:.3g} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"epsilon": args.epsilon, "seeds": args.seeds,
                                    "command": "python scripts/audit_estimator_spread.py",
                                    "settings": results}, indent=1) + "\n")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
