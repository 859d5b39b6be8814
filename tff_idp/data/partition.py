"""Seeded, deterministic partitions of a data set into clients and of clients into groups."""
from __future__ import annotations

from typing import List, Sequence

import numpy as np


def iid_partition(num_examples: int, num_clients: int, seed: int) -> List[np.ndarray]:
    """Shuffle, then split into ``num_clients`` disjoint parts whose sizes differ by <= 1."""
    if not 0 < num_clients <= num_examples:
        raise ValueError(f"num_clients={num_clients} must be in [1, {num_examples}]")
    order = np.random.default_rng(seed).permutation(num_examples)
    return [np.sort(p) for p in np.array_split(order, num_clients)]


def assign_groups(num_clients: int, ratios: Sequence[float], seed: int) -> np.ndarray:
    """Group index per client: group m gets round(ratio_m * n) clients (the last group takes
    the rounding remainder), placed at random. Disjoint and seeded."""
    ratios = np.asarray(ratios, dtype=float)
    counts = np.floor(ratios * num_clients + 0.5).astype(int)
    counts[-1] = num_clients - counts[:-1].sum()
    if np.any(counts < 0):
        raise ValueError(f"group ratios {list(ratios)} do not split {num_clients} clients")
    labels = np.repeat(np.arange(len(ratios)), counts)
    return np.random.default_rng(seed + 7919).permutation(labels)
