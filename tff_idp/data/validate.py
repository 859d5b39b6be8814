"""What every loaded data set must satisfy before anything trains on it
(:func:`check_arrays`, called by ``sources.load`` for every loader): wrong data raises
:class:`DataInvalidError` in one line instead of training to a plausible-looking number or
failing mid-run inside TensorFlow."""
from __future__ import annotations

import numpy as np

from .types import ArrayData, DataInvalidError


def check_arrays(data: ArrayData) -> ArrayData:
    """A non-empty training split; as many labels as examples in both splits; integer labels in
    [0, num_classes); real-valued features finite; the data set's own clients' example ids
    within the training set. Returns ``data``."""
    name = data.name
    if not isinstance(data.num_classes, (int, np.integer)) or data.num_classes < 1:
        raise DataInvalidError(f"dataset={name!r}: num_classes={data.num_classes!r}")
    for split, x, y in (("train", data.x_train, data.y_train),
                        ("test", data.x_test, data.y_test)):
        if len(x) == 0 and split == "train":
            raise DataInvalidError(f"dataset={name!r}: no {split} examples")
        if len(x) != len(y):
            raise DataInvalidError(f"dataset={name!r}: {len(x)} {split} examples but "
                                   f"{len(y)} {split} labels")
        y = np.asarray(y)
        if len(y) == 0:
            continue
        if not np.issubdtype(y.dtype, np.integer):
            raise DataInvalidError(f"dataset={name!r}: {split} labels of type {y.dtype}, "
                                   "expected integers")
        low, high = int(y.min()), int(y.max())
        if low < 0 or high >= data.num_classes:
            raise DataInvalidError(f"dataset={name!r}: {split} labels span {low}..{high}, "
                                   f"outside 0..{data.num_classes - 1}")
        if isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating) and \
                not np.isfinite(x).all():
            raise DataInvalidError(f"dataset={name!r}: {split} features are not all finite")
    if data.clients is not None:
        n = len(data.y_train)
        for i, ids in enumerate(data.clients):
            if len(ids) and (int(np.min(ids)) < 0 or int(np.max(ids)) >= n):
                raise DataInvalidError(f"dataset={name!r}: client {i} names training "
                                       f"examples outside 0..{n - 1}")
    return data
