"""Data sources: arrays of (x_train, y_train, x_test, y_test).

``digits``: scikit-learn's 1,797 real 8x8 handwritten digits (ships with scikit-learn, no
download), pixels scaled to [0, 1], flattened to 64 features; a seeded stratified 80/20 split
gives 1,437 training and 360 test examples.

``fashion_mnist``: TFDS's copy when ``data_dir`` has it prepared, else the original IDX files
in ``<root>/raw/fashion-mnist/`` (``python -m tff_idp.data fetch fashion_mnist`` stages them
from Debian's package; :mod:`tff_idp.data.fashion_mnist`). Same images, same order.

TensorFlow Datasets images (``fashion_mnist``, ``svhn_cropped``, ``cifar10``, ``cifar100``,
``emnist`` = EMNIST/byclass, ``emnist_digits`` = EMNIST/digits): read from ``data_dir`` with ``download=False`` semantics first;
when they are missing, downloaded only if ``allow_download`` (a cluster with a pre-filled
TFDS directory and no internet works with the default). Pixels scaled to [0, 1].
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .adult import load_adult, load_adult_standin
from .shakespeare import LEAF_NAMES, LEAF_SETS
from .synthetic import PREFIX, SHAPES, load_synthetic
from .tff_sets import TFF_SETS, cache_file, load_tff_set
from .types import ArrayData, DataInvalidError, DataUnavailableError
from .validate import check_arrays


def default_tfds_dir(root: str = "datasets") -> str:
    """TFDS's own convention: ``$TFDS_DATA_DIR`` when set, else ``<root>/tfds``."""
    return os.environ.get("TFDS_DATA_DIR") or str(Path(root) / "tfds")


def load_digits(seed: int = 0) -> ArrayData:
    from sklearn.datasets import load_digits as _load
    from sklearn.model_selection import train_test_split
    x, y = _load(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    y = y.astype(np.int32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=seed,
                                              stratify=y)
    return ArrayData("digits", x_tr, y_tr, x_te, y_te, 10)


TFDS_NAMES = {"fashion_mnist": ("fashion_mnist", 10), "svhn_cropped": ("svhn_cropped", 10),
              "cifar10": ("cifar10", 10), "cifar100": ("cifar100", 100),
              "emnist": ("emnist/byclass", 62), "emnist_digits": ("emnist/digits", 10)}


def load_tfds(name: str, data_dir: str = "datasets/tfds", allow_download: bool = False,
              seed: int = 0) -> ArrayData:
    """A TFDS image set as arrays, from ``data_dir``."""
    import tensorflow_datasets as tfds
    tfds_name, classes = TFDS_NAMES[name]
    if allow_download and not _tfds_prepared(name, data_dir):   # fail fast without a route
        from .network import HOSTS, require_host
        require_host(name, HOSTS[name], data_dir)
    try:
        splits = tfds.load(tfds_name, split=["train", "test"], data_dir=data_dir,
                           download=allow_download, as_supervised=True)
    except (AssertionError, tfds.core.DatasetNotFoundError, FileNotFoundError) as e:
        raise DataUnavailableError(
            f"dataset={name!r}: not prepared in {data_dir}; run tfds.load({tfds_name!r}, "
            f"data_dir={data_dir!r}) on a machine with internet and copy that folder here, "
            "or set allow_download=true") from e
    except Exception as e:  # noqa: BLE001 (network failures come in many types)
        if not allow_download:
            raise
        raise DataUnavailableError(f"dataset={name!r}: download into {data_dir} failed "
                                   f"({type(e).__name__}: {str(e).splitlines()[0][:120]})") from e
    (x_tr, y_tr), (x_te, y_te) = [_to_arrays(ds) for ds in splits]
    return ArrayData(name, x_tr, y_tr, x_te, y_te, classes)


def _tfds_prepared(name: str, data_dir: str) -> bool:
    """TFDS's own check, asked only when ``data_dir`` holds the set's folder (TFDS prepares
    ``<data_dir>/<name>[/<config>]/<version>``): without it nothing is prepared, and importing
    TFDS starts TensorFlow (seconds, for ``run --list``). A load asks TFDS itself (its
    test mocks stand in for a prepared folder)."""
    from pathlib import Path
    if not (Path(data_dir) / TFDS_NAMES[name][0]).is_dir():
        return False
    import tensorflow_datasets as tfds
    return tfds.builder(TFDS_NAMES[name][0], data_dir=data_dir).is_prepared()


def load_fashion_mnist(data_dir: str, allow_download: bool, root: str) -> ArrayData:
    """TFDS's fashion_mnist when prepared in ``data_dir``, else the IDX files under
    ``<root>/raw/fashion-mnist``, else (downloads allowed) TFDS's download."""
    from . import fashion_mnist
    try:
        return load_tfds("fashion_mnist", data_dir, allow_download=False)
    except DataUnavailableError:
        pass
    if fashion_mnist.present(root):
        x_tr, y_tr, x_te, y_te = fashion_mnist.load_arrays(root)
        return ArrayData("fashion_mnist", x_tr, y_tr, x_te, y_te, 10)
    if not allow_download:
        raise DataUnavailableError(_fashion_mnist_missing(data_dir, root))
    return load_tfds("fashion_mnist", data_dir, allow_download=True)


def _fashion_mnist_missing(data_dir: str, root: str) -> str:
    from pathlib import Path
    return (f"dataset='fashion_mnist': neither TFDS's copy in {data_dir} nor the IDX files in "
            f"{Path(root) / 'raw' / 'fashion-mnist'}; run python -m tff_idp.data fetch "
            "fashion_mnist (Debian's dataset-fashion-mnist), or prepare TFDS's fashion_mnist "
            "where there is internet and copy it there")


def _to_arrays(ds, chunk: int = 10000):
    """A supervised tf.data split as (float32 images in [0, 1], int32 labels)."""
    import tensorflow_datasets as tfds
    xs, ys = [], []
    for x, y in tfds.as_numpy(ds.batch(chunk)):
        xs.append(np.asarray(x, np.float32) / 255.0)
        ys.append(np.asarray(y, np.int32))
    return np.concatenate(xs), np.concatenate(ys)


def load_leaf_shakespeare(root: str = "datasets",
                          name: str = "shakespeare-leaf") -> ArrayData:
    """A Shakespeare set built by ``python -m tff_idp.data build <name>`` (a key of
    :data:`~tff_idp.data.shakespeare.LEAF_SETS`: its store and task): one natural client
    per speaking role; examples are windows viewed, not copied. The ``next`` task is LEAF's
    (the character after each 80); ``positions`` is TFF's (each of the 80 positions
    predicts the one after it; tff.simulation.baselines.shakespeare), on the same clients
    and windows; ``chunks`` is TFF's on each client's training text cut into
    non-overlapping pieces of 81 characters, as TFF's and FedML's Shakespeare trainers cut
    it, so that a local epoch is one pass over the text (about 51 pieces a client on
    average, where the windows number about 4,190); its test windows are the positions
    set's, so accuracies compare with it."""
    from pathlib import Path
    from . import shakespeare
    store, task = LEAF_SETS[name]
    try:
        clients = shakespeare.read_store(Path(root) / store)
    except shakespeare.StoreDamagedError as e:
        raise DataInvalidError(str(e)) from e
    except shakespeare.SourceMissingError as e:
        raise DataUnavailableError(str(e)) from e
    return shakespeare.windows_data(
        name, shakespeare.pack_texts([c["train"] for c in clients]),
        shakespeare.pack_texts([c["test"] for c in clients]), task != "next",
        train_stride=shakespeare.CHUNK_STRIDE if task == "chunks" else 1)


def _loaders():
    table = {"digits": lambda seed, data_dir, dl, root: load_digits(seed),
             "adult": lambda seed, data_dir, dl, root: load_adult(root, dl),
             "adult-standin": lambda seed, data_dir, dl, root: load_adult_standin(seed)}
    for n in LEAF_SETS:
        table[n] = lambda seed, data_dir, dl, root, n=n: load_leaf_shakespeare(root, n)
    for n in TFDS_NAMES:
        table[n] = lambda seed, data_dir, dl, root, n=n: load_tfds(n, data_dir, dl, seed)
    table["fashion_mnist"] = lambda seed, data_dir, dl, root: load_fashion_mnist(
        data_dir, dl, root)
    for n in TFF_SETS:
        table[n] = lambda seed, data_dir, dl, root, n=n: load_tff_set(n, root, dl)
    for n in SHAPES:
        table[PREFIX + n] = lambda seed, data_dir, dl, root, n=PREFIX + n: load_synthetic(n, seed)
    return table


SOURCES = _loaders()
# data sets that come with their own clients (use partition = "natural")
FEDERATED = ("femnist", "femnist62", "tff_shakespeare", "tff_cifar100") + LEAF_NAMES


def missing(name: str, data_dir: str = "datasets/tfds", allow_download: bool = False,
            root: str = "datasets"):
    """Without loading anything: why ``name`` cannot be loaded here (a one-line message),
    or None when it can (present, shipped, synthetic, or downloads are allowed). Lets a
    table refuse to start instead of failing run after run."""
    from pathlib import Path
    if allow_download:
        return None
    if name == "fashion_mnist":
        from . import fashion_mnist
        if fashion_mnist.present(root) or _tfds_prepared(name, data_dir):
            return None
        return _fashion_mnist_missing(data_dir, root)
    if name in TFDS_NAMES:
        if not _tfds_prepared(name, data_dir):
            return (f"dataset={name!r}: not prepared in {data_dir}; prepare it where there is "
                    "internet and copy it there, or set allow_download=true")
        return None
    if name in TFF_SETS and not cache_file(name, root).is_file():
        return f"dataset={name!r}: {cache_file(name, root)} is missing (see datasets/README.md)"
    if name in LEAF_NAMES and not (Path(root) / LEAF_SETS[name][0] / "meta.json").is_file():
        return (f"dataset={name!r}: not built in {root}; run python -m tff_idp.data build "
                f"{LEAF_SETS[name][0]}")
    if name == "adult" and not (Path(root) / "raw" / "adult" / "adult.data").is_file():
        return f"dataset='adult': {Path(root) / 'raw' / 'adult'} has no adult.data"
    return None


def load(name: str, seed: int = 0, data_dir: str = "datasets/tfds",
         allow_download: bool = False, root: str = "datasets") -> ArrayData:
    if name not in SOURCES:
        raise ValueError(f"dataset={name!r} is not one of {sorted(SOURCES)}")
    return check_arrays(SOURCES[name](seed, data_dir, allow_download, root))
