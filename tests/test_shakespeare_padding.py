"""scripts/shakespeare_padding.py: TFF's padding of Shakespeare examples (BOS + text + EOS,
padded to a multiple of 81, 80 targets a chunk) counted by hand, and the speeches it reads."""
import importlib.util
from pathlib import Path

import numpy as np

from tests.data.test_shakespeare import texts  # noqa: F401 (fixture)

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "shakespeare_padding.py"
spec = importlib.util.spec_from_file_location("shakespeare_padding", SCRIPT)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)


def test_pad_targets_counted_by_hand():
    # 79 characters + BOS + EOS = 81 tokens: one chunk, no pad
    assert mod.pad_share(np.array([79])) == (80, 0)
    # 10 characters: 12 tokens, 69 pads, all of them targets of the one chunk
    assert mod.pad_share(np.array([10])) == (80, 69)
    # 100 characters: 102 tokens -> 162, two chunks, 60 pads
    assert mod.pad_share(np.array([10, 100])) == (240, 129)


def test_speech_lengths_of_roles_with_enough_lines(texts):  # noqa: F811
    train, test = mod.snippet_lengths(texts, min_lines=4, train_fraction=0.5)
    # COR: "Nothing, my lord." (17), then three lines joined by two separators;
    # LEAR: three lines joined, then one line
    cor = [17, len("Unhappy that I am, I cannot heave") + len(
        "My heart into my mouth: I love your majesty") + len(
        "According to my bond; no more nor less.") + 2]
    lear = [len("Speak, my daughter,") + len("What can you say to draw") + len(
        "A third more opulent?") + 2, len("Nothing will come of nothing: speak again.")]
    assert list(train) == [cor[0], lear[0]] and list(test) == [cor[1], lear[1]]
    assert mod.snippet_lengths(texts, min_lines=5)[0].size == 0
