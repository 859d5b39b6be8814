"""UCI Adult (census income; paper 002's data set) and its labelled offline stand-in.

``adult``: the UCI files ``adult.data`` (32,561 rows) and ``adult.test`` (16,281 rows) from
``<root>/raw/adult/``, downloaded from the UCI repository when missing and ``allow_download``.
Paper 002 uses "32,561 training samples with 14 normalized features": every one of the 14
attributes becomes one feature in [0, 1] (numeric ones min-max scaled with the training
set's range, categorical ones coded by their sorted training-set categories and scaled by
the number of categories; '?' is a category of its own); label 1 for income >50K.

``adult-standin``: no internet here, so the offline stand-in is scikit-learn's breast-cancer
set (569 examples, 30 features min-max scaled, binary), split 80/20 stratified. It is a
different task; every result made with it says so (``ArrayData.note`` goes into the run's
summary and table).
"""
from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import List, Tuple

import numpy as np

from .types import ArrayData, DataUnavailableError

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
           "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
           "hours-per-week", "native-country"]
NUMERIC = {"age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"}
STANDIN_NOTE = ("stand-in for Adult: scikit-learn breast cancer (569 examples, 30 features), "
                "not the paper's data")


def read_rows(path: Path) -> Tuple[List[List[str]], np.ndarray]:
    """(attribute strings, labels) of a UCI adult file; skips blank and '|' comment lines and
    accepts the test file's trailing '.' on labels."""
    rows, labels = [], []
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("|"):
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(COLUMNS) + 1:
            raise DataUnavailableError(f"dataset='adult': {path} has a row of {len(parts)} "
                                       f"fields, expected {len(COLUMNS) + 1}")
        rows.append(parts[:-1])
        labels.append(1 if parts[-1].rstrip(".") == ">50K" else 0)
    return rows, np.asarray(labels, np.int32)


def encode(train_rows, test_rows) -> Tuple[np.ndarray, np.ndarray]:
    """The 14 attributes as features in [0, 1], scaled with the training set only."""
    tr = np.zeros((len(train_rows), len(COLUMNS)), np.float32)
    te = np.zeros((len(test_rows), len(COLUMNS)), np.float32)
    for j, col in enumerate(COLUMNS):
        a = [r[j] for r in train_rows]
        b = [r[j] for r in test_rows]
        if col in NUMERIC:
            a, b = np.asarray(a, float), np.asarray(b, float)
        else:
            cats = {c: i for i, c in enumerate(sorted(set(a)))}
            a = np.asarray([cats[c] for c in a], float)
            b = np.asarray([cats.get(c, 0) for c in b], float)   # unseen -> first category
        lo, span = a.min(), max(a.max() - a.min(), 1e-12)
        tr[:, j], te[:, j] = (a - lo) / span, np.clip((b - lo) / span, 0, 1)
    return tr, te


def load_adult(root: str = "datasets", allow_download: bool = False) -> ArrayData:
    folder = Path(root) / "raw" / "adult"
    files = [folder / "adult.data", folder / "adult.test"]
    for f in files:
        if f.is_file():
            continue
        if not allow_download:
            raise DataUnavailableError(
                f"dataset='adult': {f} is missing; download {UCI}{f.name} into {folder}/, "
                "set allow_download=true, or use dataset='adult-standin' offline")
        from .network import HOSTS, require_host
        require_host("adult", HOSTS["adult"], str(folder))
        folder.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f.name + ".tmp")
        try:
            urllib.request.urlretrieve(UCI + f.name, tmp)
        except OSError as e:
            raise DataUnavailableError(f"dataset='adult': downloading {UCI}{f.name} failed "
                                       f"({e}); put the file in {folder}/ by hand") from e
        tmp.replace(f)
    (tr_rows, y_tr), (te_rows, y_te) = read_rows(files[0]), read_rows(files[1])
    x_tr, x_te = encode(tr_rows, te_rows)
    return ArrayData("adult", x_tr, y_tr, x_te, y_te, 2)


def load_adult_standin(seed: int = 0) -> ArrayData:
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    x, y = load_breast_cancer(return_X_y=True)
    x = ((x - x.min(0)) / np.maximum(x.max(0) - x.min(0), 1e-12)).astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y.astype(np.int32), test_size=0.2,
                                              random_state=seed, stratify=y)
    return ArrayData("adult-standin", x_tr, y_tr, x_te, y_te, 2, note=STANDIN_NOTE)
