"""Seeded, deterministic partitions of a data set into clients and of clients into groups."""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

# the config key ``partition``: how the training set is split into clients ("natural": the
# data set's own clients; the rest are the functions below, chosen in engine/experiment.py)
PARTITIONS = ("iid", "dirichlet", "dirichlet_per_client", "pachinko", "classes", "dealt_classes",
              "shards", "natural")


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


def dirichlet_label_skew(labels: np.ndarray, num_clients: int, concentration: float,
                         seed: int, min_examples: int = 1, max_tries: int = 100):
    """Label skew by a Dirichlet prior over clients (Yurochkin et al. 2019, Wang et al. 2020
    (FedMA); one reading of GDPFed Table V's lambda in {0.3, 0.5, 0.7, 0.9}): for every class,
    its examples are split across clients in proportions drawn from Dir(concentration * 1_n).
    Smaller concentration, more skew; clients' sizes vary. Redraws (seeded) until every client
    has at least ``min_examples`` examples (with thousands of small clients and a small
    concentration no draw gives every client one: :func:`dirichlet_per_client` then)."""
    labels = np.asarray(labels)
    if concentration <= 0:
        raise ValueError(f"concentration={concentration} must be positive")
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    for _ in range(max_tries):
        parts = [[] for _ in range(num_clients)]
        for c in classes:
            idx = rng.permutation(np.flatnonzero(labels == c))
            p = rng.dirichlet(np.full(num_clients, concentration))
            cuts = (np.cumsum(p)[:-1] * len(idx)).astype(int)
            for client, chunk in enumerate(np.split(idx, cuts)):
                parts[client].extend(chunk.tolist())
        if min(len(p) for p in parts) >= min_examples:
            return [np.sort(np.asarray(p, dtype=int)) for p in parts]
    raise ValueError(f"concentration={concentration}: could not give every one of "
                     f"{num_clients} clients {min_examples} examples in {max_tries} draws")


def dirichlet_per_client(labels: np.ndarray, num_clients: int, concentration: float,
                         seed: int) -> List[np.ndarray]:
    """Label skew by a Dirichlet prior per client (Hsu, Qi and Brown 2019, Sec. 3: each
    client's class proportions q ~ Dir(concentration * p), p the data set's class shares;
    the other reading of GDPFed Table V's lambda). Every client keeps the IID split's size
    (sizes differ by <= 1): client k's examples are drawn from the classes in proportions
    q_k, without replacement; a class that runs out passes its share to the classes that
    still have examples, in proportion to q_k (so the last clients drawn are less skewed
    than their q: the finite data set's limit, measured in tests/data/test_partition.py).
    Clients are filled in a seeded random order."""
    labels = np.asarray(labels)
    if concentration <= 0:
        raise ValueError(f"concentration={concentration} must be positive")
    if not 0 < num_clients <= len(labels):
        raise ValueError(f"num_clients={num_clients} must be in [1, {len(labels)}]")
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(labels, return_counts=True)
    pools = [list(rng.permutation(np.flatnonzero(labels == c))) for c in classes]
    left = counts.astype(np.int64).copy()
    prior = counts / counts.sum()
    sizes = np.array([len(p) for p in np.array_split(np.arange(len(labels)), num_clients)])
    parts: List[np.ndarray] = [np.empty(0, dtype=int)] * num_clients
    for client in rng.permutation(num_clients):
        q = rng.dirichlet(concentration * prior * len(classes))
        take = np.zeros(len(classes), dtype=np.int64)
        need = int(sizes[client])
        while need > 0:                   # the share of classes that ran out, re-drawn
            open_ = left - take > 0
            w = np.where(open_, q, 0.0)
            w = w / w.sum() if w.sum() > 0 else open_ / open_.sum()
            draw = np.minimum(rng.multinomial(need, w), left - take)
            take += draw
            need -= int(draw.sum())
        chosen = []
        for c, k in enumerate(take):
            chosen += pools[c][:k]
            del pools[c][:k]
        left -= take
        parts[client] = np.sort(np.asarray(chosen, dtype=int))
    return parts


def classes_per_client(labels: np.ndarray, num_clients: int, classes_each: int, seed: int):
    """Every client holds exactly ``classes_each`` distinct classes (paper 001: s = 5, 10 for
    EMNIST over 20 clients, s = 2, 5, 10 for CIFAR-10, s = 3, 5, 10 for CIFAR-100 over 100).
    Classes are dealt round-robin over a shuffled class order so that every class goes to
    about the same number of clients; a class's examples are split evenly among its holders."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    if not 0 < classes_each <= len(classes):
        raise ValueError(f"classes_each={classes_each} must be in [1, {len(classes)}]")
    rng = np.random.default_rng(seed)
    order = rng.permutation(classes)
    holders = {c: [] for c in classes}
    client_classes = []
    pos = 0
    for client in range(num_clients):
        chosen = []
        while len(chosen) < classes_each:
            c = order[pos % len(order)]
            pos += 1
            if c not in chosen:
                chosen.append(c)
        client_classes.append(chosen)
        for c in chosen:
            holders[c].append(client)
    parts = [[] for _ in range(num_clients)]
    for c, owners in holders.items():
        if not owners:
            continue
        idx = rng.permutation(np.flatnonzero(labels == c))
        for owner, chunk in zip(owners, np.array_split(idx, len(owners))):
            parts[owner].extend(chunk.tolist())
    return [np.sort(np.asarray(p, dtype=int)) for p in parts]


def pachinko(labels: np.ndarray, num_clients: int, examples_per_client: int, seed: int,
             coarse_of: dict = None, alpha: float = 0.1, beta: float = 10.0):
    """Pachinko allocation (Li & McCallum 2006), as TFF's CIFAR-100 was built (Reddi et al.
    2021, App. C.4): every client draws a Dir(alpha) distribution over coarse labels and, per
    coarse label, a Dir(beta) over its fine labels; each example is drawn by sampling a coarse
    then a fine label, without replacement; an exhausted fine label is removed and the
    client's distributions renormalised. TFF's values: alpha = 0.1, beta = 10. With no coarse
    labels (``coarse_of=None``, e.g. CIFAR-10 in paper 004) every class is its own coarse
    label and the allocation is a Dir(alpha) one-level Pachinko."""
    labels = np.asarray(labels)
    classes = list(np.unique(labels))
    coarse_of = coarse_of or {c: c for c in classes}
    coarse = sorted(set(coarse_of[c] for c in classes))
    fines = {g: [c for c in classes if coarse_of[c] == g] for g in coarse}
    if num_clients * examples_per_client > len(labels):
        raise ValueError(f"{num_clients} x {examples_per_client} examples exceed the "
                         f"{len(labels)} available")
    rng = np.random.default_rng(seed)
    pools = {c: list(rng.permutation(np.flatnonzero(labels == c))) for c in classes}
    parts = []
    for _ in range(num_clients):
        p_coarse = dict(zip(coarse, rng.dirichlet(np.full(len(coarse), alpha))))
        p_fine = {g: dict(zip(fines[g], rng.dirichlet(np.full(len(fines[g]), beta))))
                  for g in coarse}
        mine = []
        while len(mine) < examples_per_client:
            live = [g for g in coarse if any(pools[c] for c in fines[g])]
            w = np.array([p_coarse[g] for g in live])
            w = w / w.sum() if w.sum() > 0 else np.full(len(live), 1 / len(live))
            g = live[rng.choice(len(live), p=w)]
            live_f = [c for c in fines[g] if pools[c]]
            wf = np.array([p_fine[g][c] for c in live_f])
            wf = wf / wf.sum() if wf.sum() > 0 else np.full(len(live_f), 1 / len(live_f))
            c = live_f[rng.choice(len(live_f), p=wf)]
            mine.append(pools[c].pop())
        parts.append(np.sort(np.asarray(mine, dtype=int)))
    return parts


def label_shards(labels: np.ndarray, num_clients: int, shards_each: int, seed: int):
    """Equal-size clients that each hold only a subset of the labels: McMahan et al. (2017)
    shards. Examples sorted by label (shuffled within a label) are cut into
    ``num_clients * shards_each`` equal shards and every client gets ``shards_each`` of them
    at random. Paper 002 (Adult, 100 clients, "uniformly distributed ... each client holding
    only a subset of the labels") is ``shards_each = 1``: every client has one label, except
    a client whose shard straddles two labels. A client holds at most ``2 * shards_each``
    labels and client sizes differ by at most ``shards_each``."""
    labels = np.asarray(labels)
    shards = num_clients * shards_each
    if not 0 < shards <= len(labels):
        raise ValueError(f"{num_clients} clients x {shards_each} shards need at most "
                         f"{len(labels)} shards")
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(np.flatnonzero(labels == c))
                            for c in np.unique(labels)])
    pieces = np.array_split(order, shards)
    deal = rng.permutation(shards).reshape(num_clients, shards_each)
    return [np.sort(np.concatenate([pieces[s] for s in row])) for row in deal]


def dealt_classes(labels: np.ndarray, num_clients: int, classes_each: int, seed: int):
    """Classes dealt at random, as FedRep and CENTAUR deal them (paper 001 partitions
    "following [15]"; CENTAUR ``utils/data_utils.py:noniid``, snapshot 71e092e): the list of
    class slots, every class repeated ``num_clients * classes_each / C`` times (when that is
    not a whole number the first classes of a shuffled order take one slot more), is shuffled
    and cut into ``classes_each`` slots per client; each class's examples, shuffled, are cut
    into as many equal shards as it has slots, one per slot. As in CENTAUR's code (whose retry
    loop draws once) a client may be dealt the same class twice: it then holds two shards of
    it and fewer distinct classes (CIFAR-10, s = 10, N = 20: 6.6 on average)."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    if not 0 < classes_each <= len(classes):
        raise ValueError(f"classes per client {classes_each} must be in [1, {len(classes)}]")
    rng = np.random.default_rng(seed)
    slots = num_clients * classes_each
    per_class = np.full(len(classes), slots // len(classes))
    per_class[rng.permutation(len(classes))[:slots % len(classes)]] += 1
    deal = rng.permutation(np.repeat(classes, per_class)).reshape(num_clients, classes_each)
    shards = {}
    for c, count in zip(classes, per_class):
        if count:
            shards[c] = np.array_split(rng.permutation(np.flatnonzero(labels == c)), count)
    parts = [[] for _ in range(num_clients)]
    for client, row in enumerate(deal):
        for c in row:
            parts[client].extend(shards[c].pop().tolist())
    return [np.sort(np.asarray(p, dtype=int)) for p in parts]


def validation_split(client_indices: Sequence[np.ndarray], fraction: float, seed: int):
    """Hold out ``fraction`` of each client's training examples for validation (CENTAUR's
    ``--validation_ratio .1``; paper 001 reports the test accuracy at the round of best mean
    validation accuracy): per client a seeded random floor(fraction * n) of its ids, at least
    one when fraction > 0 and the client has two or more. Returns (train ids, validation
    ids) per client."""
    train, val = [], []
    for c, idx in enumerate(client_indices):
        n = len(idx)
        k = int(np.floor(fraction * n))
        if fraction > 0 and n >= 2:
            k = min(max(k, 1), n - 1)
        order = np.random.default_rng([seed, c, 0x5A1]).permutation(n)
        val.append(np.sort(idx[order[:k]]))
        train.append(np.sort(idx[order[k:]]))
    return train, val
