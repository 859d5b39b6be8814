"""How the fast backend cuts a round's cohort into chunks (``fast_chunk_size`` clients a
pass) and a chunk into lanes (``fast_lanes`` sub-cohorts): each lane's rows
(:func:`lane_rows`), the rows a part chunk is padded to (:func:`padded_part_rows`), the
specs a chunk function is traced with (:func:`any_chunk_size`) and a chunk's arrays as
tensors (:func:`chunk_tensors`). docs/backends.md, "Lanes" and "Part chunks, padded"."""
from __future__ import annotations

import numpy as np
import tensorflow as tf


def lane_rows(k, lanes: int):
    """(lo, hi, keep) per lane of ``lanes`` sub-cohorts of a chunk's k >= 1 clients (k a
    Python int or a scalar tensor: the lanes are one traced graph for every k): rows lo:hi
    are trained and the first ``keep`` of them are the lane's own clients, in client order.
    The lanes split k as evenly as they can (sizes differ by at most one, so none is empty
    when k >= lanes); a lane with no client of its own (k < lanes) trains a copy of the
    chunk's last client and keeps none of it, since a sub-cohort of 0 clients reaches
    operations that refuse empty tensors (a grouped convolution's filter of 0 elements)."""
    if lanes == 1:
        return [(0, k, k)]
    bounds = [(lane * k) // lanes for lane in range(lanes + 1)]
    rows = []
    for a, b in zip(bounds, bounds[1:]):
        lo = tf.minimum(a, k - 1)
        rows.append((lo, tf.maximum(b, lo + 1), b - a))
    return rows


# a part chunk that pads (backends.FastBackend.pads_part_chunks): to a multiple of this
# many clients a lane
PART_CHUNK_ROWS = 4


def padded_part_rows(left: int, chunk: int, lanes: int = 1) -> int:
    """The rows a part chunk of ``left`` (< ``chunk``) clients is trained at: ``left`` rounded
    up to a multiple of :data:`PART_CHUNK_ROWS` clients a lane, at most ``chunk``. The rows
    past ``left`` train copies of the chunk's last client and are cut off before the clip
    (``backends.FastBackend._chunk_sums``): a few graphs of known sizes instead of one of any
    size, for at most ``PART_CHUNK_ROWS * lanes - 1`` clients' training more."""
    step = PART_CHUNK_ROWS * max(int(lanes), 1)
    return min(-(-int(left) // step) * step, int(chunk))


def own_rows(trained, groups):
    """``trained`` (a nest of tensors with a client axis first) cut to the chunk's own
    clients, one a row of ``groups``: a padded part chunk's extra rows dropped after
    training, before the clip (:func:`padded_part_rows`); a chunk that pads nothing is
    returned as it is."""
    k = tf.shape(groups)[0]
    return tf.nest.map_structure(lambda t: t[:k], trained)


def any_chunk_size(args, keep_data: bool = False):
    """The chunk function's arguments as specs whose per-client arguments (the phases'
    arrays, groups, seeds, slots, personal rows) have any number of rows. A run whose first
    chunk is a part chunk (a cohort smaller than ``fast_chunk_size``, whose size changes
    every round) traces with these first, once: a chunk of another size is a subtype of
    them, where tracing at the first chunk's size made the next size trace it again
    (``reduce_retracing``), 1-2 s of such a run. A run whose first chunk is full keeps that
    trace for its full chunks: the graph of known sizes is the faster one (Shakespeare's
    LSTM in chunks of 8: about 1.4x, docs/backends.md)."""
    def spec(t):             # a numpy array or a tensor, not converted (no copy)
        if t is None:
            return None
        return tf.TensorSpec([None] + list(t.shape[1:]), tf.as_dtype(t.dtype))

    weights, state, data, tags, counts, lr, personal = args
    if not keep_data:        # keep_data: a padded part chunk's arrays keep their size
        data = tf.nest.map_structure(spec, data)
    return (weights, state, data, tuple(spec(t) for t in tags),
            counts, lr, [spec(p) for p in personal])


def chunk_tensors(data, a: int, b: int, rows=None):
    """The rows a..b of every phase's arrays as tensors, each array converted once: phases
    that share their examples' array (``backends.FastBackend._cached_arrays``) get the same
    tensor, not a copy each (the chunk's largest input). ``rows`` (a part chunk's
    :func:`padded_part_rows`): padded to that many rows with copies of the last."""
    made = {}

    def tensor(t):
        if t is None:
            return None
        if id(t) not in made:
            part = t[a:b]
            if rows is not None and rows > len(part):
                part = np.concatenate([part, np.repeat(part[-1:], rows - len(part), 0)])
            made[id(t)] = tf.constant(part)
        return made[id(t)]

    return tuple(tuple(tensor(t) for t in d) for d in data)
