"""Data sources: arrays of (x_train, y_train, x_test, y_test).

``digits``: scikit-learn's 1,797 real 8x8 handwritten digits (ships with scikit-learn, no
download), pixels scaled to [0, 1], flattened to 64 features; a seeded stratified 80/20 split
gives 1,437 training and 360 test examples.
"""
from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class ArrayData:
    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int


def load_digits(seed: int = 0) -> ArrayData:
    from sklearn.datasets import load_digits as _load
    from sklearn.model_selection import train_test_split
    x, y = _load(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    y = y.astype(np.int32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=seed,
                                              stratify=y)
    return ArrayData("digits", x_tr, y_tr, x_te, y_te, 10)


SOURCES = {"digits": load_digits}


def load(name: str, seed: int = 0) -> ArrayData:
    if name not in SOURCES:
        raise ValueError(f"dataset={name!r} is not one of {sorted(SOURCES)}")
    return SOURCES[name](seed)
