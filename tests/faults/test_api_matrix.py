"""The generated fault matrix, the Python API (issue 76): every numeric argument of the
library's entry points (``tff_idp.learning``: ``dp_aggregator``, ``dp_event``,
``plan_from_budgets``) times the bad-value classes. The API refuses what the CLI refuses:
one line naming the argument, raised before any work (no TFF computation is built, no
accountant runs); ACCEPTED lists the valid values."""
import math

import pytest

from tff_idp import learning
from tff_idp.config import ConfigError

BAD = {"string": "abc", "list": [1.0, 2.0], "nested list": [[1.0]], "nan": math.nan,
       "inf": math.inf, "-inf": -math.inf, "-1": -1, "0": 0, "huge": 1e308,
       "huge int": 2 ** 63 - 1, "bool": True, "None": None, "table": {"a": 1}}

GOOD = {
    "dp_aggregator": dict(noise_multiplier=1.0, clients_per_round=10.0, clip=1.0,
                          keep_fraction=1.0),
    "dp_event": dict(noise_multiplier=1.0, sampling_rate=0.1, rounds=10),
    "plan_from_budgets": dict(method="gdpfed", budgets=[1.0, 2.0], group_sizes=[50, 50],
                              rounds=5, expected_rate=0.1, clip=1.0, delta=1e-4),
}
ACCEPTED = {("dp_aggregator", "noise_multiplier", "0"),      # no noise: a non-private sum
            ("plan_from_budgets", "delta", "None")}          # 1 / n^1.1, a run's default
LIST_ARGS = ("budgets", "group_sizes")
CASES = [(fn, arg, cls) for fn, args in GOOD.items() for arg in args for cls in BAD
         if not (arg == "method" and cls == "string")
         and not (arg in LIST_ARGS and cls == "list")]


def _call(fn, kwargs):
    return getattr(learning, fn)(**kwargs)


@pytest.mark.parametrize("fn,arg,cls", CASES)
def test_an_argument(fn, arg, cls):
    kwargs = dict(GOOD[fn], **{arg: BAD[cls]})
    try:
        _call(fn, kwargs)
    except (TypeError, ValueError, ConfigError) as e:
        assert (fn, arg, cls) not in ACCEPTED, (fn, arg, cls, str(e))
        text = str(e)
        assert "\n" not in text and len(text) <= 400, text
        assert text.startswith(f"{arg}=") or f" {arg}=" in text, (fn, arg, cls, text)
        return
    assert (fn, arg, cls) in ACCEPTED, f"{fn}({arg}={BAD[cls]!r}) was accepted"


def test_the_good_arguments_are_accepted():
    for fn, kwargs in GOOD.items():
        _call(fn, kwargs)
