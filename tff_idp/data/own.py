"""Your own data as the suite's :class:`ArrayData` (the Python API, ``tff_idp.api``):
arrays, or a TFF ``ClientData`` pair whose clients become the natural partition.

A run's fingerprint names its data set; for data of your own the name is
``own:<digest>``, the first 12 hex digits of a SHA-256 over the arrays and the clients, so
that a checkpoint or a run folder of other data is never taken for this one.
"""
from __future__ import annotations

import hashlib
from typing import List, Optional, Sequence

import numpy as np

from .types import ArrayData
from .validate import check_arrays

PREFIX = "own:"


def digest_name(x_train, y_train, x_test, y_test, clients=None) -> str:
    """``own:<12 hex digits>`` of the arrays' bytes, shapes and dtypes, and the clients."""
    h = hashlib.sha256()
    for a in (x_train, y_train, x_test, y_test) + tuple(clients or ()):
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    return PREFIX + h.hexdigest()[:12]


def from_arrays(x_train, y_train, x_test, y_test, num_classes: Optional[int] = None,
                clients: Optional[Sequence[Sequence[int]]] = None) -> ArrayData:
    """Features (float, one row per example) and integer labels in [0, num_classes)
    (default: the largest label + 1); ``clients``: training-example ids per client (your own
    partition: use ``partition = "natural"``), or None to let a partitioner split them.
    Checked as every loaded set is (``data.validate.check_arrays``)."""
    x_train, x_test = np.asarray(x_train, np.float32), np.asarray(x_test, np.float32)
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    for key, y in (("y_train", y_train), ("y_test", y_test)):
        if not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"{key}: labels must be integers, got dtype {y.dtype}")
    if num_classes is None:
        num_classes = int(max(y_train.max(initial=0), y_test.max(initial=0))) + 1
    parts = None if clients is None else [np.asarray(c, np.int64) for c in clients]
    name = digest_name(x_train, y_train, x_test, y_test, parts)
    return check_arrays(ArrayData(name, x_train, y_train.astype(np.int32), x_test,
                                  y_test.astype(np.int32), int(num_classes), clients=parts,
                                  note="your own arrays"))


def from_client_data(train, test, x_key: str = "x", y_key: str = "y",
                     num_classes: Optional[int] = None) -> ArrayData:
    """A TFF ``ClientData`` pair (``tff.simulation.datasets.ClientData``: train and test):
    every training client one of ours (its examples in client-id order), the test clients'
    examples pooled as the test set. Elements are mappings with ``x_key`` (features) and
    ``y_key`` (integer label)."""
    from .tff_sets import _client_arrays
    xs, ys, clients, offset = [], [], [], 0
    for split, cd in (("train", train), ("test", test)):
        per_client = _client_arrays(cd, "client_data", split)
        split_x: List[np.ndarray] = []
        split_y: List[np.ndarray] = []
        for cid in sorted(per_client):
            element = per_client[cid]
            if not element:
                continue
            for key in (x_key, y_key):
                if key not in element:
                    raise ValueError(f"{'x_key' if key == x_key else 'y_key'}={key!r}: not a "
                                     f"field of client {cid!r}'s elements "
                                     f"({', '.join(sorted(element))})")
            split_x.append(element[x_key])
            split_y.append(element[y_key])
            if split == "train":
                clients.append(np.arange(offset, offset + len(element[y_key])))
                offset += len(element[y_key])
        if not split_x:
            raise ValueError(f"{split}: the ClientData has no example")
        xs.append(np.concatenate(split_x))
        ys.append(np.concatenate(split_y))
    return from_arrays(xs[0], ys[0], xs[1], ys[1], num_classes, clients)
