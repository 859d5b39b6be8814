"""The data package's shared types: the arrays every loader returns and the error a missing
data set raises. Loaders and the registry (``sources``) both import them from here, so the
registry sits above the loaders and nothing imports back up."""
from __future__ import annotations

import dataclasses
from typing import List, Optional

import numpy as np


@dataclasses.dataclass(frozen=True)
class ArrayData:
    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int
    # the data set's own clients (writers, speaking roles...): training-example ids each;
    # None for centralised sets, which a partitioner splits
    clients: Optional[List[np.ndarray]] = None
    note: str = ""          # e.g. that this is a stand-in for another data set


class DataUnavailableError(ValueError):
    """A real data set is not in the local cache and may not be downloaded."""


class DataInvalidError(DataUnavailableError):
    """A data set's files are there but wrong (damaged, altered or inconsistent): it must
    never train. One line naming the file or array and what is wrong."""
