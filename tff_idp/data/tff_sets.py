"""TFF's own federated data sets, read with TFF's loaders from a pre-staged cache.

``tff.simulation.datasets.<set>.load_data(cache_dir=...)`` skips its download when the
decompressed ``.sqlite`` is already in ``cache_dir``; we point it at ``<root>/tff`` (config key
``data_root``). Without the file, and unless ``allow_download``, loading stops with a
one-line error giving the URL and where to put the file. The natural clients (writers,
speaking roles, Pachinko clients) are kept as the data set's own partition
(``partition = "natural"``); the converted arrays are stored once in the
:class:`~tff_idp.data.store.DataStore`, keyed by the sqlite file's size.

=================  ==========================  =======  ========================
name               TFF loader                  clients  task
=================  ==========================  =======  ========================
femnist            emnist, only_digits=True     3,383   10 digits, 28x28x1
femnist62          emnist, only_digits=False    3,400   62 classes, 28x28x1
tff_shakespeare    shakespeare                    715   next character (LEAF)
tff_cifar100       cifar100                       500   100 classes, 32x32x3
=================  ==========================  =======  ========================

Shakespeare's snippets are joined per client and cut into LEAF's examples (80-character
windows, next character, LEAF's 80-symbol vocabulary: the same task and model as
``shakespeare-leaf``); the test set is the union of the clients' test splits.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict

import numpy as np

from .store import DataStore, unpack_clients
from .types import ArrayData, DataUnavailableError

URL = "https://storage.googleapis.com/tff-datasets-public/{}.lzma"

TFF_SETS: Dict[str, dict] = {
    "femnist": dict(loader="emnist", file="emnist_all.sqlite", kwargs={"only_digits": True},
                    classes=10, clients=3383),
    "femnist62": dict(loader="emnist", file="emnist_all.sqlite", kwargs={"only_digits": False},
                      classes=62, clients=3400),
    "tff_shakespeare": dict(loader="shakespeare", file="shakespeare.sqlite", kwargs={},
                            classes=80, clients=715),
    "tff_cifar100": dict(loader="cifar100", file="cifar100.sqlite", kwargs={},
                         classes=100, clients=500),
}


def cache_file(name: str, root: str) -> Path:
    return Path(root) / "tff" / TFF_SETS[name]["file"]


def _client_arrays(client_data, name: str, split: str):
    """{client id: element dict of numpy arrays} through TFF's ClientData, with a bar."""
    from tqdm.auto import tqdm
    out = {}
    for cid in tqdm(sorted(client_data.client_ids), desc=f"{name} {split}", unit="client",
                    leave=False):
        ds = client_data.create_tf_dataset_for_client(cid)
        batches = list(ds.batch(100000).as_numpy_iterator())
        out[cid] = {k: np.concatenate([b[k] for b in batches]) for k in batches[0]} \
            if batches else {}
    return out


def _convert(name: str, train, test) -> Dict[str, np.ndarray]:
    """Arrays to store: images as uint8 + labels, or text as int8 characters, per client."""
    from . import shakespeare
    spec = TFF_SETS[name]
    arrays = {}
    for split, cd in (("train", train), ("test", test)):
        per_client = _client_arrays(cd, name, split)
        ids = sorted(per_client)
        if spec["loader"] == "shakespeare":
            texts = ["\n".join(s.decode("utf-8", "replace")
                               for s in per_client[c].get("snippets", [])) for c in ids]
            chars, offsets = shakespeare.pack_texts(texts)
            arrays[f"{split}_chars"], arrays[f"{split}_offsets"] = chars, offsets
            continue
        key = "pixels" if spec["loader"] == "emnist" else "image"
        xs = [per_client[c][key] for c in ids if per_client[c]]
        ys = [per_client[c]["label"] for c in ids if per_client[c]]
        x = np.concatenate(xs)
        if spec["loader"] == "emnist":           # float pixels in [0, 1] -> uint8
            x = np.round(x * 255).astype(np.uint8)[..., None]
        arrays[f"{split}_x"] = x.astype(np.uint8)
        arrays[f"{split}_y"] = np.concatenate(ys).astype(np.int32)
        sizes = [len(y) for y in ys]
        arrays[f"{split}_offsets"] = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return arrays


def load_tff_set(name: str, root: str = "datasets", allow_download: bool = False) -> ArrayData:
    """A TFF federated set as :class:`ArrayData` with its natural clients."""
    spec = TFF_SETS[name]
    db = cache_file(name, root)
    if not db.is_file() and not allow_download:
        raise DataUnavailableError(
            f"dataset={name!r}: {db} is missing; download {URL.format(spec['file'])}, "
            f"decompress it (unxz) into {db.parent}/, or set allow_download=true")
    from ..runtime import import_tff
    loader = getattr(import_tff().simulation.datasets, spec["loader"])
    if not db.is_file():
        _download(loader, db, spec)
    store = DataStore(root)

    def build():
        train, test = loader.load_data(cache_dir=str(db.parent), **spec["kwargs"])
        return _convert(name, train, test)

    path = store.path(name, db_bytes=db.stat().st_size)
    arrays = store.get_or_build(path, build, {"source": str(db), **spec["kwargs"]})
    return _as_array_data(name, arrays, spec["classes"])


def _download(loader, db: Path, spec: dict) -> None:
    """TFF's own download into a scratch folder, moved into the cache only when complete
    (TFF decompresses straight into its cache, so an interrupted download would otherwise
    leave a truncated .sqlite that its loader takes as present)."""
    from .network import HOSTS, require_host
    require_host(db.stem, HOSTS["tff"], str(db.parent))
    scratch = db.parent / ".download.partial"
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        loader.load_data(cache_dir=str(scratch), **spec["kwargs"])
    except OSError as e:
        raise DataUnavailableError(f"dataset file {db.name}: download of "
                                   f"{URL.format(spec['file'])} failed ({e})") from e
    os.replace(scratch / db.name, db)


def _as_array_data(name: str, a: Dict[str, np.ndarray], classes: int) -> ArrayData:
    from . import shakespeare
    if "train_chars" in a:
        return shakespeare.windows_data(name, (a["train_chars"], a["train_offsets"]),
                                        (a["test_chars"], a["test_offsets"]))
    clients = unpack_clients(np.arange(a["train_offsets"][-1]), a["train_offsets"])
    return ArrayData(name, a["train_x"].astype(np.float32) / 255.0, a["train_y"],
                     a["test_x"].astype(np.float32) / 255.0, a["test_y"], classes,
                     clients=clients)

