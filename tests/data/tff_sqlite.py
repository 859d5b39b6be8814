"""Tiny TFF federated caches in the real format (the schema and tf.train.Example features
TFF's SqlClientData and its loaders parse), for offline tests of the TFF loader path."""
import sqlite3

import numpy as np
import tensorflow as tf


def _feature(v):
    v = np.asarray(v)
    if v.dtype.kind == "f":
        return tf.train.Feature(float_list=tf.train.FloatList(value=v.ravel()))
    if v.dtype.kind in "iu":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=v.ravel()))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes(v.item())]))


def write_db(path, splits):
    """``splits``: {split_name: {client_id: [ {feature: value}, ... ]}}."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE examples (split_name TEXT NOT NULL, client_id TEXT NOT NULL, "
                "serialized_example_proto BLOB NOT NULL)")
    con.execute("CREATE TABLE client_metadata (client_id TEXT NOT NULL, split_name TEXT NOT "
                "NULL, num_examples INTEGER NOT NULL)")
    for split, clients in splits.items():
        for cid, examples in clients.items():
            for ex in examples:
                proto = tf.train.Example(features=tf.train.Features(
                    feature={k: _feature(v) for k, v in ex.items()}))
                con.execute("INSERT INTO examples VALUES (?, ?, ?)",
                            (split, cid, proto.SerializeToString()))
            con.execute("INSERT INTO client_metadata VALUES (?, ?, ?)",
                        (cid, split, len(examples)))
    con.commit()
    con.close()


def emnist_db(path, clients=4, per_client=5, seed=0):
    rng = np.random.default_rng(seed)

    def split(n):
        return {f"f{c:04d}_00": [{"label": np.int64(rng.integers(10)),
                                  "pixels": rng.random((28, 28)).astype(np.float32)}
                                 for _ in range(n)] for c in range(clients)}
    write_db(path, {"digits_only_train": split(per_client), "digits_only_test": split(2),
                    "all_train": split(per_client), "all_test": split(2)})


def shakespeare_db(path):
    lines = {"THE_TEMPEST_MIRANDA": ["If by your art, my dearest father, you have",
                                     "Put the wild waters in this roar, allay them." * 3],
             "THE_TEMPEST_PROSPERO": ["Be collected: No more amazement: tell your piteous "
                                      "heart There's no harm done." * 2]}
    write_db(path, {"train": {c: [{"snippets": np.array(s.encode())} for s in ls]
                              for c, ls in lines.items()},
                    "test": {c: [{"snippets": np.array((ls[0] * 3).encode())}]
                             for c, ls in lines.items()}})


def cifar100_db(path, clients=3, per_client=4, seed=0):
    rng = np.random.default_rng(seed)

    def split(n):
        return {str(c): [{"coarse_label": np.int64(rng.integers(20)),
                          "image": rng.integers(0, 256, (32, 32, 3)).astype(np.int64),
                          "label": np.int64(rng.integers(100))} for _ in range(n)]
                for c in range(clients)}
    write_db(path, {"train": split(per_client), "test": split(2)})
