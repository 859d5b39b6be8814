"""A client's examples as local training reads them, and a cohort's as one set of arrays.

- :func:`training_order`: the order a client uses its examples in a round, drawn with numpy
  from a key (the engine's is (seed, round, client, version[, phase])), so that both
  backends train on the same examples in the same order.
- :class:`ClientDataset`: one client's examples (``x``, ``y``), taken in an order.
- :func:`cohort_batches`, :func:`cohort_rows`, :func:`padded_order`: K clients' batches as
  ``[K, steps, batch, ...]`` arrays with 1/0 example weights, or each client's rows once
  with the batches as positions into them (FedJAX's ``ClientDataset.padded_batch`` and
  ``for_each_client``: one shape for the cohort, weights for the differences; a step whose
  weights are all 0 changes nothing, ``algorithms.client_work.ClientTrainer.step``).

numpy only: no TensorFlow, nothing of the engine.
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence

import numpy as np


# how client data is ordered (``training_order``, keyed by ``engine.client_data``); part of
# every run fingerprint, so results made with another order are not taken as complete.
# 1: tf.data shuffles (sessions 1-2); 2: numpy permutations shared by both backends
DATA_ORDER_VERSION = 2


def training_order(n: int, key: Sequence[int], epochs: Optional[int] = None,
                   need: Optional[int] = None, with_replacement: bool = False) -> np.ndarray:
    """Positions into a client's ``n`` examples in the order it trains on them: ``epochs``
    permutations one after another (the last batch of the backend may be short), or the
    first ``need`` (= steps x batch size: full batches only) of enough permutations; with
    ``with_replacement``, ``need`` independent uniform draws (MS-PAFL's Qb examples with
    replacement, paper 002 eq. 9). Every draw is from ``numpy.random.default_rng(key)``."""
    rng = np.random.default_rng(list(key))
    if need is not None and with_replacement:
        return rng.integers(n, size=need)
    passes = epochs or -(-need // n)
    return np.concatenate([rng.permutation(n) for _ in range(passes)])[:need]


class ClientDataset(NamedTuple):
    """One client's examples: ``x`` [n, ...] and ``y`` [n, ...]."""
    x: np.ndarray
    y: np.ndarray

    def take(self, order) -> "ClientDataset":
        """The examples at positions ``order`` (repeats allowed), in that order."""
        return ClientDataset(self.x[order], self.y[order])


def padded_rows(arrays, dtype=None) -> np.ndarray:
    """K clients' arrays of different lengths (examples, labels, features) as one
    [K, n_max, ...] array, zero-padded after each client's own rows."""
    out = np.zeros((len(arrays), max(len(a) for a in arrays)) + arrays[0].shape[1:],
                   dtype or arrays[0].dtype)
    for c, a in enumerate(arrays):
        out[c, :len(a)] = a
    return out


def padded_order(orders, batch: int):
    """K clients' training orders (positions into each one's examples, of different
    lengths) as ([K, steps, batch] positions, [K, steps, batch] 1/0 weights): the batches of a
    phase of epochs, a short last batch and missing steps padded with weight 0."""
    steps = max(1, max(-(-len(o) // batch) for o in orders))
    order = np.zeros((len(orders), steps * batch), np.int32)
    ws = np.zeros((len(orders), steps * batch), np.float32)
    for c, o in enumerate(orders):
        order[c, :len(o)], ws[c, :len(o)] = o, 1.0
    return order.reshape(len(orders), steps, batch), ws.reshape(len(orders), steps, batch)


def cohort_batches(datasets: List[ClientDataset], batch: int, steps: Optional[int] = None):
    """K clients' examples (each in training order) as (xs [K, steps, batch, ...], ys, ws):
    with ``steps``, that many full batches each and ws None (nothing is padded); without,
    each client's own number of batches, its short last batch and missing steps padded with
    weight 0 in ``ws`` [K, steps, batch]."""
    k = len(datasets)
    if steps is not None:
        return (np.stack([d.x.reshape((steps, batch) + d.x.shape[1:]) for d in datasets]),
                np.stack([d.y.reshape((steps, batch) + d.y.shape[1:]) for d in datasets]),
                None)
    steps = max(1, max(-(-len(d.y) // batch) for d in datasets))
    x0, y0 = datasets[0]
    xs = np.zeros((k, steps * batch) + x0.shape[1:], x0.dtype)
    ys = np.zeros((k, steps * batch) + y0.shape[1:], y0.dtype)
    ws = np.zeros((k, steps * batch), np.float32)
    for c, (x, y) in enumerate(datasets):
        xs[c, :len(y)], ys[c, :len(y)], ws[c, :len(y)] = x, y, 1.0
    return (xs.reshape((k, steps, batch) + x0.shape[1:]),
            ys.reshape((k, steps, batch) + y0.shape[1:]), ws.reshape(k, steps, batch))


def cohort_rows(datasets: List[ClientDataset]):
    """K clients' examples once each as (xs [K, n_max, ...], ys [K, n_max, ...]),
    zero-padded: the rows that :func:`padded_order`'s positions gather batches from."""
    return (padded_rows([d.x for d in datasets]), padded_rows([d.y for d in datasets]))
