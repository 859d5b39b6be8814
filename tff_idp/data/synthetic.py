"""Synthetic stand-ins with the shape of a real data set, for wiring checks (``--scale
smoke``) where the real set is not on the machine. Never a result about the paper's data:
every run on one carries ``note`` into its summary and report.

Images: one fixed random template per class; an example is 0.6 * its class template plus
0.4 * uniform noise, in [0, 1] (learnable, not trivial). Characters: random windows over
LEAF's 80 symbols whose next character is the last one plus 1 (mod 80). Features (Adult's
shape): a class mean per class plus noise, in [0, 1].
"""
from __future__ import annotations

import numpy as np

from .shakespeare import LEAF_SETS
from .types import ArrayData

# name of the real set -> (input shape, classes); shape "text" = 80-character windows and
# the character after each, "positions" = the same windows and a target at every position
SHAPES = {
    "fashion_mnist": ((28, 28, 1), 10), "emnist_digits": ((28, 28, 1), 10),
    "emnist": ((28, 28, 1), 62), "femnist": ((28, 28, 1), 10), "femnist62": ((28, 28, 1), 62),
    "svhn_cropped": ((32, 32, 3), 10), "cifar10": ((32, 32, 3), 10),
    "cifar100": ((32, 32, 3), 100), "tff_cifar100": ((32, 32, 3), 100),
    "tff_shakespeare": ("text", 80), "adult": ((14,), 2),
    **{name: ("text" if task == "next" else "positions", 80)
       for name, (_, task) in LEAF_SETS.items()},
}
PREFIX = "synthetic:"
TRAIN, TEST = 3000, 500          # examples of every stand-in but those sized like the real set
SIZES = {"adult": (32561, 16281)}   # Adult's train / test rows (paper 002: N = 100 clients)


def load_synthetic(name: str, seed: int = 0, train: int = TRAIN, test: int = TEST) -> ArrayData:
    """``synthetic:<real name>``: ``train`` + ``test`` examples shaped like the real set."""
    real = name[len(PREFIX):]
    shape, classes = SHAPES[real]
    train, test = SIZES.get(real, (train, test))
    rng = np.random.default_rng([seed, 4242])
    note = f"synthetic stand-in for {real} (wiring check, not the paper's data)"
    y = rng.integers(0, classes, train + test).astype(np.int32)
    if shape in ("text", "positions"):
        x = rng.integers(0, classes, (train + test, 80)).astype(np.int8)
        y = ((x[:, -1:] if shape == "text" else x).astype(np.int32) + 1) % classes
        y = y[:, 0] if shape == "text" else y
    else:
        templates = rng.random((classes,) + shape).astype(np.float32)
        x = 0.6 * templates[y] + 0.4 * rng.random((train + test,) + shape).astype(np.float32)
    return ArrayData(name, x[:train], y[:train], x[train:], y[train:], classes, note=note)
