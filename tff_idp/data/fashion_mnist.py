"""Fashion-MNIST from its original IDX files, offline.

The four files of Xiao et al.'s release (``train-images-idx3-ubyte.gz``,
``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz``, ``t10k-labels-idx1-ubyte.gz``;
60,000 + 10,000 28x28 uint8 images, labels 0-9) are read from ``<root>/raw/fashion-mnist/``.
TFDS's ``fashion_mnist`` is built from the same files in the same order, so both routes give
the same arrays.

``fetch(root)`` stages them from Debian's ``dataset-fashion-mnist`` package (``apt-get
download`` needs no root; ``dpkg-deb -x`` unpacks it), checks the sha256 of each file's
decompressed content (Debian recompressed the .gz files, so the compressed bytes differ from
the upstream release; the content does not), and moves the folder into place only when all
four are good.

Example::

    $ python -m tff_idp.data fetch fashion_mnist
    fashion_mnist: 4 IDX files -> datasets/raw/fashion-mnist
"""
from __future__ import annotations

import gzip
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

FOLDER = "fashion-mnist"
DEBIAN_PACKAGE = "dataset-fashion-mnist"
DEBIAN_PATH = "usr/share/datasets/fashion-mnist"
# sha256 of each file's decompressed IDX content (header included)
FILES = {
    "train-images-idx3-ubyte.gz":
        "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
    "train-labels-idx1-ubyte.gz":
        "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
    "t10k-images-idx3-ubyte.gz":
        "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte.gz":
        "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}


class FetchError(RuntimeError):
    """The files could not be staged (no apt, no network, a bad checksum)."""


def folder(root) -> Path:
    return Path(root) / "raw" / FOLDER


def present(root) -> bool:
    return all((folder(root) / name).is_file() for name in FILES)


def _content(path) -> bytes:
    """The decompressed bytes of an IDX file (gzip or plain), from a regular file only."""
    from ..atomic import regular_file
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(regular_file(Path(path)), "rb") as f:
        return f.read()


def parse_idx(raw: bytes, path) -> np.ndarray:
    """IDX bytes as a numpy array: magic 0x0000 + dtype code 0x08 (uint8) + number of
    dimensions, then one big-endian uint32 per dimension, then the data."""
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"file={str(path)!r}: not an IDX file of unsigned bytes")
    ndim = raw[3]
    header = 4 + 4 * ndim
    shape = tuple(int(d) for d in np.frombuffer(raw[4:header], dtype=">u4"))
    data = np.frombuffer(raw, dtype=np.uint8, offset=header)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"file={str(path)!r}: {data.size} bytes of data for shape {shape}")
    return data.reshape(shape)


def read_idx(path) -> np.ndarray:
    """An IDX file (gzip or plain) as a numpy array (:func:`parse_idx`)."""
    return parse_idx(_content(path), path)


def _verified(base: Path, name: str) -> bytes:
    """The decompressed content of one staged file, checked against its sha256
    (:data:`FILES`): a one-line DataInvalidError for a missing, unreadable, damaged or
    altered copy, whatever its size and modification time."""
    from .types import DataInvalidError
    path = base / name
    try:
        raw = _content(path)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise DataInvalidError(f"dataset='fashion_mnist': {path}: unreadable "
                               f"({getattr(e, 'strerror', None) or e}); delete {base} and "
                               "run python -m tff_idp.data fetch fashion_mnist") from None
    got = hashlib.sha256(raw).hexdigest()
    if got != FILES[name]:
        raise DataInvalidError(
            f"dataset='fashion_mnist': {path}: sha256 of its content is {got[:16]}..., "
            f"expected {FILES[name][:16]}...; a damaged or altered copy: delete {base} and "
            "run python -m tff_idp.data fetch fashion_mnist")
    return raw


def verify(root) -> None:
    """DataInvalidError (one line) unless each of the four staged files has its expected
    content (sha256 of the decompressed IDX), read every time: a byte flipped with the
    modification time kept is caught (about 0.5 s for the four files)."""
    base = folder(root)
    for name in FILES:
        _verified(base, name)


def load_arrays(root):
    """(x_train, y_train, x_test, y_test): float32 images in [0, 1] of shape [n, 28, 28, 1]
    (TFDS's layout) and int32 labels, from files whose content is verified as they are read
    (:func:`_verified`: each file decompressed once) and whose counts agree."""
    from .types import DataInvalidError
    base = folder(root)
    raw = {name: parse_idx(_verified(base, name), base / name) for name in FILES}
    out = []
    for split in ("train", "t10k"):
        images = raw[f"{split}-images-idx3-ubyte.gz"]
        labels = raw[f"{split}-labels-idx1-ubyte.gz"]
        if images.ndim != 3 or images.shape[1:] != (28, 28) or labels.shape != images.shape[:1]:
            raise DataInvalidError(f"dataset='fashion_mnist': {split} images {images.shape} "
                                   f"and labels {labels.shape} do not match")
        out += [(images.astype(np.float32) / 255.0)[..., None], labels.astype(np.int32)]
    return tuple(out)


def content_sha256(path) -> str:
    with gzip.open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_files(base: Path, only: str = None) -> None:
    """FetchError unless all four files (or the one named ``only``) are in ``base`` with the
    expected content."""
    for name, want in FILES.items():
        if only is not None and name != only:
            continue
        path = base / name
        if not path.is_file():
            raise FetchError(f"file={str(path)!r}: missing")
        try:
            got = content_sha256(path)
        except (OSError, EOFError) as e:
            raise FetchError(f"file={str(path)!r}: unreadable ({e})") from e
        if got != want:
            raise FetchError(f"file={str(path)!r}: sha256 of its content is {got[:16]}..., "
                             f"expected {want[:16]}...")


def fetch(root, source: Path = None) -> Path:
    """Stage the four files under ``<root>/raw/fashion-mnist`` (atomic: a temporary folder
    renamed into place). ``source``: a folder holding them, or the Debian .deb; default:
    ``apt-get download dataset-fashion-mnist``. Returns the folder."""
    dest = folder(root)
    if present(root):
        check_files(dest)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".fetch-") as tmp:
        tmp = Path(tmp)
        if source is not None and Path(source).is_dir():
            files_dir = Path(source)
        else:
            deb = Path(source) if source is not None else _apt_download(tmp)
            _run(["dpkg-deb", "-x", str(deb), str(tmp / "unpacked")], "dpkg-deb -x")
            files_dir = tmp / "unpacked" / DEBIAN_PATH
        staged = tmp / FOLDER
        staged.mkdir()
        for name in FILES:
            if (files_dir / name).is_file():
                shutil.copyfile(files_dir / name, staged / name)
        check_files(staged)
        if not dest.exists():
            staged.rename(dest)
    return dest


def _apt_download(where: Path) -> Path:
    if shutil.which("apt-get") is None:
        raise FetchError(_routes("apt-get is not on this machine"))
    _run(["apt-get", "download", DEBIAN_PACKAGE], "apt-get download", cwd=where, timeout=120)
    debs = sorted(where.glob(f"{DEBIAN_PACKAGE}_*.deb"))
    if not debs:
        raise FetchError(_routes("apt-get download left no .deb"))
    return debs[0]


def _run(cmd, what, cwd=None, timeout=60):
    if shutil.which(cmd[0]) is None:
        raise FetchError(_routes(f"{cmd[0]} is not on this machine"))
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise FetchError(_routes(f"{what} timed out after {timeout} s")) from e
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()
        raise FetchError(_routes(f"{what} failed ({last[-1] if last else done.returncode})"))


def _routes(why: str) -> str:
    return (f"dataset='fashion_mnist': {why}; either put the four IDX files of Fashion-MNIST "
            f"(Debian package {DEBIAN_PACKAGE}, or the upstream release) in "
            "<root>/raw/fashion-mnist/, or prepare TFDS's fashion_mnist in the TFDS data_dir")
