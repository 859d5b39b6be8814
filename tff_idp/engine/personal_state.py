"""Each client's personal parameters, kept between rounds by the runner (clients stay
stateless, as TFF requires; FedRep and CENTAUR keep them in a table keyed by client id).

:class:`PersonalStore` holds one stacked ``[N, ...]`` array per tensor with personal
coordinates, for all N clients, initialised from the seeded initial model (every client's
personal part starts equal; the shared coordinates are stored as 0, so a client's start
weights are ``mask * broadcast + row``). Before a round the loop gathers the cohort's rows
(fancy indexing, no loop over clients), the backend trains from them and returns them
updated, and the loop scatters them back; clients outside the cohort keep theirs. It lives in
host memory: ``nbytes`` = N x (size of the tensors with personal coordinates) x 4 bytes.
"""
from __future__ import annotations

from typing import List, Sequence

import numpy as np


def same_shapes(saved: Sequence, current: Sequence) -> bool:
    """Whether a checkpoint's arrays ``saved`` have, one by one, the shapes of ``current``
    (the state they would replace)."""
    return [np.shape(x) for x in saved] == [np.shape(x) for x in current]


class PersonalStore:
    def __init__(self, initial_weights: Sequence[np.ndarray], split, num_clients: int):
        self.tensors = split.personal_tensors
        self.values: List[np.ndarray] = [
            np.repeat((np.asarray(initial_weights[i], np.float32)
                       * (1.0 - split.masks[i]))[None], num_clients, axis=0)
            for i in self.tensors]

    @property
    def nbytes(self) -> int:
        return int(sum(v.nbytes for v in self.values))

    def gather(self, clients: Sequence[int]) -> List[np.ndarray]:
        """The rows of ``clients``, in that order: [K, ...] per personal tensor."""
        ids = np.asarray(clients, dtype=np.int64)
        return [v[ids] for v in self.values]

    def scatter(self, clients: Sequence[int], rows: Sequence[np.ndarray]) -> None:
        """Write ``rows`` ([K, ...] per personal tensor, in ``clients`` order) back."""
        if len(rows) != len(self.values):
            raise ValueError(f"{len(rows)} personal tensors returned, {len(self.values)} kept")
        ids = np.asarray(clients, dtype=np.int64)
        if len(np.unique(ids)) != len(ids):
            raise ValueError("a client appears twice in one cohort")
        for v, r in zip(self.values, rows):
            v[ids] = r

    def snapshot(self) -> List[np.ndarray]:
        return [v.copy() for v in self.values]

    def restore(self, values: Sequence[np.ndarray]) -> None:
        if not same_shapes(values, self.values):
            raise ValueError("the checkpoint's personal state does not fit this run")
        self.values = [np.array(v, np.float32) for v in values]
