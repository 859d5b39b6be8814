"""The test accuracy of a model that is pure Gaussian noise, for comparison with a private
baseline that may have collapsed (issue 59: paper 002's LDP-FedAvg on Fashion-MNIST).

LDP-FedAvg's server model is the mean of the check-ins' clipped models (norm at most C = 1)
plus their Lemma 1 noise (``tff_idp.privacy.mspafl.local_noise_std``: sigma = 8.687 per
weight at eps_l = 1, about sigma / sqrt(100) after averaging over ~100 check-ins). A
logistic model without bias predicts argmax(x W), which does not change when W is scaled,
so a model that is noise only predicts as W ~ N(0, I) does, whatever sigma. This script
draws such W (784 x 10, the ``logistic_nobias`` model of runs/ms_pafl/fmnist/) and prints
the mean, standard deviation and quantiles of their accuracy on the Fashion-MNIST test set,
beside the per-coordinate noise, the noise norm and their ratio to the model's largest norm.

    python scripts/random_classifier.py [--draws 2000] [--seed 0] [--data-root datasets] \
        [--curves runs/ms_pafl/reports/fmnist/ldp-fedavg-noise/curves.csv]

With ``--curves``, each column of a report's curves.csv is pooled over its seeds and the
second half of its rounds (every round's model is a fresh draw when the noise dominates)
and printed beside the pure-noise models' accuracy.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def noise_accuracies(x: np.ndarray, y: np.ndarray, draws: int, seed: int,
                     classes: int = 10) -> np.ndarray:
    """Accuracy (%) on (x, y) of ``draws`` linear models W ~ N(0, I) of shape [features,
    classes], predicting argmax(x W)."""
    rng = np.random.default_rng(seed)
    out = np.empty(draws)
    for i in range(draws):
        w = rng.standard_normal((x.shape[1], classes)).astype(np.float32)
        out[i] = 100.0 * np.mean(np.argmax(x @ w, axis=1) == y)
    return out


def pooled_late_rounds(path: Path) -> dict:
    """{column: accuracies (%) of every seed's rounds after the half} from a curves.csv."""
    import csv
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    last = max(int(r["round"]) for r in rows)
    out: dict = {}
    for r in rows:
        if int(r["round"]) > last // 2 and r["accuracy"]:
            out.setdefault(r["column"] or r["method"], []).append(float(r["accuracy"]))
    return {k: np.asarray(v) for k, v in out.items()}


def main(argv=None) -> int:
    from tff_idp.data import fashion_mnist
    from tff_idp.privacy import mspafl
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--draws", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-root", default=str(ROOT / "datasets"))
    p.add_argument("--curves", default=None, help="a report's curves.csv to compare")
    args = p.parse_args(argv)
    if args.draws < 2:
        print(f"error: --draws={args.draws}: needs at least 2", file=sys.stderr)
        return 2
    _, _, x_test, y_test = fashion_mnist.load_arrays(args.data_root)
    x = x_test.reshape(len(x_test), -1)
    acc = noise_accuracies(x, y_test, args.draws, args.seed)
    q = np.percentile(acc, [2.5, 25, 50, 75, 97.5])
    print(f"Pure-noise logistic models (784 x 10, no bias), {args.draws} draws, seed {args.seed}, "
          f"on the {len(y_test)} Fashion-MNIST test images:")
    print(f"  accuracy %: mean {acc.mean():.2f}, std {acc.std(ddof=1):.2f}; quantiles 2.5/25/50/"
          f"75/97.5: {' / '.join(f'{v:.2f}' for v in q)}")
    d, cohort = x.shape[1] * 10, 100
    print("LDP-FedAvg's server model (C = 1, delta_l = 1e-4, ~100 check-ins, 7,840 weights):")
    for eps in (1.0, 7.99):
        sigma = mspafl.local_noise_std(eps, 1e-4, 1.0)
        per = sigma / math.sqrt(cohort)
        print(f"  eps_l = {eps:g}: sigma {sigma:.3f} per weight a client; after averaging "
              f"{per:.3f} per weight, noise norm {per * math.sqrt(d):.1f} against a model norm "
              f"of at most 1")
    if args.curves:
        print(f"{args.curves}: every seed's rounds after the half, pooled:")
        for column, a in pooled_late_rounds(Path(args.curves)).items():
            lo, hi = np.percentile(a, [2.5, 97.5])
            print(f"  {column}: {len(a)} rounds, accuracy % mean {a.mean():.2f}, std "
                  f"{a.std(ddof=1):.2f}; quantiles 2.5/97.5: {lo:.2f} / {hi:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
