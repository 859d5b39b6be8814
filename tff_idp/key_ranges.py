"""The range a numeric config key must lie in, declared once by the module that acts on the
key (the core's in ``tff_idp.config.RANGES``, a method's in its ``config_keys``) and checked by
one function, so that a key's rule and its one-line message live beside the code that reads
it.

No TensorFlow, nothing of the package but the error type: a method module declares its keys'
ranges without loading a model.
"""
from __future__ import annotations

import dataclasses
import math
from .errors import fail


@dataclasses.dataclass(frozen=True)
class Range:
    """``low``..``high``, each end closed unless ``*_open``; ``why`` follows the message
    after a colon. An unset key (None) is not checked: a key that may not be None says so by
    its default."""
    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    high_open: bool = False
    why: str = ""

    def holds(self, value) -> bool:
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return bool(above and below)          # NaN fails both

    def rule(self) -> str:
        """'must be positive', 'must be >= 1', 'must be in (0, 1]', ... (and ': why')."""
        if math.isinf(self.high):
            if self.low == 0 and self.low_open:
                text = "must be positive"
            else:
                text = f"must be {'>' if self.low_open else '>='} {self.low:g}"
        else:
            text = (f"must be in {'(' if self.low_open else '['}{self.low:g}, "
                    f"{self.high:g}{')' if self.high_open else ']'}")
        return f"{text}: {self.why}" if self.why else text


POSITIVE = Range(0, low_open=True)
NON_NEGATIVE = Range(0)
AT_LEAST_ONE = Range(1)
PROBABILITY_OPEN = Range(0, 1, low_open=True, high_open=True)      # (0, 1)
# a step size: beyond 1e3 one step of a unit gradient already overflows float32 weights within
# a few rounds (the round loop also stops at the first non-finite model)
LEARNING_RATE = Range(0, 1e3, low_open=True)


def check(key: str, value, rng: Range) -> None:
    """Raises ConfigError ``key=value: rule`` when a set ``value`` lies outside ``rng``."""
    if value is not None and not rng.holds(value):
        fail(key, value, rng.rule())
