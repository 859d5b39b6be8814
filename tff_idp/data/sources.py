"""Data sources: arrays of (x_train, y_train, x_test, y_test).

``digits``: scikit-learn's 1,797 real 8x8 handwritten digits (ships with scikit-learn, no
download), pixels scaled to [0, 1], flattened to 64 features; a seeded stratified 80/20 split
gives 1,437 training and 360 test examples.

TensorFlow Datasets images (``fashion_mnist``, ``svhn_cropped``, ``cifar10``, ``cifar100``,
``emnist`` = EMNIST/byclass, ``emnist_digits`` = EMNIST/digits): read from ``data_dir`` with ``download=False`` semantics first;
when they are missing, downloaded only if ``allow_download`` (a cluster with a pre-filled
TFDS directory and no internet works with the default). Pixels scaled to [0, 1].
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


class DataUnavailableError(ValueError):
    """A real data set is not in the local cache and may not be downloaded."""


TFDS_NAMES = {"fashion_mnist": ("fashion_mnist", 10), "svhn_cropped": ("svhn_cropped", 10),
              "cifar10": ("cifar10", 10), "cifar100": ("cifar100", 100),
              "emnist": ("emnist/byclass", 62), "emnist_digits": ("emnist/digits", 10)}


def load_tfds(name: str, data_dir: str = "datasets/tfds", allow_download: bool = False,
              seed: int = 0) -> ArrayData:
    """A TFDS image set as arrays, from ``data_dir``."""
    import tensorflow_datasets as tfds
    tfds_name, classes = TFDS_NAMES[name]
    try:
        splits = tfds.load(tfds_name, split=["train", "test"], data_dir=data_dir,
                           download=allow_download, as_supervised=True)
    except (AssertionError, tfds.core.DatasetNotFoundError, FileNotFoundError) as e:
        raise DataUnavailableError(
            f"dataset={name!r}: not prepared in {data_dir}; run tfds.load({tfds_name!r}, "
            f"data_dir={data_dir!r}) on a machine with internet and copy that folder here, "
            "or set allow_download=true") from e
    (x_tr, y_tr), (x_te, y_te) = [_to_arrays(ds) for ds in splits]
    return ArrayData(name, x_tr, y_tr, x_te, y_te, classes)


def _to_arrays(ds, chunk: int = 10000):
    """A supervised tf.data split as (float32 images in [0, 1], int32 labels)."""
    import tensorflow_datasets as tfds
    xs, ys = [], []
    for x, y in tfds.as_numpy(ds.batch(chunk)):
        xs.append(np.asarray(x, np.float32) / 255.0)
        ys.append(np.asarray(y, np.int32))
    return np.concatenate(xs), np.concatenate(ys)


SOURCES = {"digits": load_digits, **{n: load_tfds for n in TFDS_NAMES}}


def load(name: str, seed: int = 0, data_dir: str = "datasets/tfds",
         allow_download: bool = False) -> ArrayData:
    if name not in SOURCES:
        raise ValueError(f"dataset={name!r} is not one of {sorted(SOURCES)}")
    if name in TFDS_NAMES:
        return load_tfds(name, data_dir, allow_download, seed)
    return SOURCES[name](seed)
