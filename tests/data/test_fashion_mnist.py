"""Fashion-MNIST from its IDX files: the reader, the staging from Debian's package (checked,
atomic), the source's routes, and the real files when this machine has them."""
import gzip
import hashlib
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tff_idp.data import fashion_mnist, sources

ROOT = Path(__file__).resolve().parents[2]


def _idx(path, array):
    header = bytes([0, 0, 0x08, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())
    return hashlib.sha256(header + array.astype(np.uint8).tobytes()).hexdigest()


@pytest.fixture
def made_files(tmp_path, monkeypatch):
    """Four small IDX files in the real format, and FILES pointing at their checksums."""
    rng = np.random.default_rng(0)
    src = tmp_path / "src"
    src.mkdir()
    arrays = {"train-images-idx3-ubyte.gz": rng.integers(0, 256, (12, 28, 28)),
              "train-labels-idx1-ubyte.gz": rng.integers(0, 10, 12),
              "t10k-images-idx3-ubyte.gz": rng.integers(0, 256, (5, 28, 28)),
              "t10k-labels-idx1-ubyte.gz": rng.integers(0, 10, 5)}
    sums = {name: _idx(src / name, a) for name, a in arrays.items()}
    monkeypatch.setattr(fashion_mnist, "FILES", sums)
    return src, arrays


def test_reader_and_source_give_tfds_layout(made_files, tmp_path):
    src, arrays = made_files
    out = fashion_mnist.fetch(tmp_path / "root", src)
    assert out == tmp_path / "root" / "raw" / "fashion-mnist"
    assert np.array_equal(fashion_mnist.read_idx(out / "t10k-labels-idx1-ubyte.gz"),
                          arrays["t10k-labels-idx1-ubyte.gz"])
    d = sources.load("fashion_mnist", root=str(tmp_path / "root"),
                     data_dir=str(tmp_path / "no-tfds"))
    assert d.x_train.shape == (12, 28, 28, 1) and d.x_test.shape == (5, 28, 28, 1)
    assert d.x_train.dtype == np.float32 and 0 <= d.x_train.min() and d.x_train.max() <= 1
    assert np.allclose(d.x_train[3, :, :, 0] * 255, arrays["train-images-idx3-ubyte.gz"][3])
    assert d.y_train.dtype == np.int32 and d.num_classes == 10
    assert sources.missing("fashion_mnist", str(tmp_path / "no-tfds"),
                           root=str(tmp_path / "root")) is None


def test_a_bad_file_is_refused_and_nothing_is_staged(made_files, tmp_path):
    src, _ = made_files
    with gzip.open(src / "t10k-labels-idx1-ubyte.gz", "wb") as f:
        f.write(bytes([0, 0, 8, 1, 0, 0, 0, 1, 7]))          # valid IDX, other content
    with pytest.raises(fashion_mnist.FetchError, match="sha256"):
        fashion_mnist.fetch(tmp_path / "root", src)
    raw = tmp_path / "root" / "raw"
    assert not (raw / "fashion-mnist").exists() and not list(raw.glob(".fetch-*"))


@pytest.mark.parametrize("damage", ["flip", "truncate", "fifo"])
def test_a_staged_copy_is_checked_by_content_every_time(made_files, tmp_path, damage):
    """Issue 76: a byte flipped in a staged file whose modification time was kept passed the
    old size-and-mtime stamp and ended in a traceback; a FIFO in its place would block. Now
    every load checks the content's sha256: one line, DataInvalidError."""
    import os
    from tff_idp.data.types import DataInvalidError, DataUnavailableError
    src, _ = made_files
    out = fashion_mnist.fetch(tmp_path / "root", src)
    sources.load("fashion_mnist", root=str(tmp_path / "root"),
                 data_dir=str(tmp_path / "no-tfds"))                   # good: loads
    path = out / "train-images-idx3-ubyte.gz"
    st = path.stat()
    if damage == "fifo":
        path.unlink()
        os.mkfifo(path)
    else:
        with gzip.open(path, "rb") as f:
            raw = bytearray(f.read())
        if damage == "flip":
            raw[500] ^= 1
        else:
            raw = raw[:-100]
        with gzip.open(path, "wb") as f:
            f.write(bytes(raw))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    # a FIFO is no staged file (missing, never read); the others are damaged copies
    with pytest.raises(DataUnavailableError if damage == "fifo" else DataInvalidError) as e:
        sources.load("fashion_mnist", root=str(tmp_path / "root"),
                     data_dir=str(tmp_path / "no-tfds"))
    assert "fashion-mnist" in str(e.value) and "\n" not in str(e.value)


def test_not_an_idx_file():
    bad = Path(__file__)
    with pytest.raises(ValueError, match="not an IDX file"):
        fashion_mnist.read_idx(bad)


def make_deb(src, tmp_path):
    """A .deb with the package's layout (usr/share/datasets/fashion-mnist/) holding the files
    of ``src``, built with dpkg-deb."""
    pkg = tmp_path / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(
        "Package: dataset-fashion-mnist\nVersion: 0.1\nArchitecture: all\n"
        "Maintainer: test <t@example.org>\nDescription: test\n")
    shutil.copytree(src, pkg / fashion_mnist.DEBIAN_PATH)
    deb = tmp_path / "dataset-fashion-mnist_0.1_all.deb"
    subprocess.run(["dpkg-deb", "-b", str(pkg), str(deb)], check=True, capture_output=True)
    return deb


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb not on this machine")
def test_fetch_unpacks_a_debian_package(made_files, tmp_path):
    src, _ = made_files
    out = fashion_mnist.fetch(tmp_path / "root", make_deb(src, tmp_path))
    assert sorted(p.name for p in out.iterdir()) == sorted(fashion_mnist.FILES)


def test_missing_names_both_routes(tmp_path):
    why = sources.missing("fashion_mnist", str(tmp_path / "tfds"), root=str(tmp_path))
    assert "fetch fashion_mnist" in why and "TFDS" in why
    with pytest.raises(sources.DataUnavailableError):
        sources.load("fashion_mnist", data_dir=str(tmp_path / "tfds"), root=str(tmp_path))


REAL = ROOT / "datasets"


@pytest.mark.skipif(not fashion_mnist.present(REAL),
                    reason="real Fashion-MNIST not staged (python -m tff_idp.data fetch "
                    "fashion_mnist)")
def test_real_files_when_present():
    fashion_mnist.check_files(fashion_mnist.folder(REAL))
    labels = fashion_mnist.read_idx(fashion_mnist.folder(REAL) / "t10k-labels-idx1-ubyte.gz")
    assert labels.shape == (10000,) and np.bincount(labels).tolist() == [1000] * 10
    images = fashion_mnist.read_idx(fashion_mnist.folder(REAL) / "train-images-idx3-ubyte.gz")
    assert images.shape == (60000, 28, 28)
    # the first training image is an ankle boot (label 9) in the original release
    train_labels = fashion_mnist.read_idx(fashion_mnist.folder(REAL) /
                                          "train-labels-idx1-ubyte.gz")
    assert train_labels[0] == 9 and images[0].max() == 255
