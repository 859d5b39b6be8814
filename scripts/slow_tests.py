"""Write tests/slow_tests.txt, the tests that ``scripts/test.sh --fast`` (``pytest -m "not
slow"``) leaves out, from a full run's durations:

    bash scripts/test.sh --durations=0 > /tmp/suite.log; python scripts/slow_tests.py /tmp/suite.log

A test is slow when its setup and call together took at least ``--seconds`` (default 3) in
that run. Timings here are noisy: the list is regenerated, never hand-tuned to a number."""
import argparse
import re
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S.*?)\s*$")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("log", help="pytest output with --durations=0")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "tests" /
                                        "slow_tests.txt"))
    args = p.parse_args()
    took = defaultdict(float)
    for line in Path(args.log).read_text().splitlines():
        m = LINE.match(line)
        if m and m.group(2) != "teardown":
            took[m.group(3)] += float(m.group(1))
    if not took:
        raise SystemExit(f"error: log={args.log!r}: no durations (run pytest with --durations=0)")
    slow = sorted(t for t, s in took.items() if s >= args.seconds)
    Path(args.out).write_text(
        f"# tests/conftest.py marks these slow ({len(slow)} of the {len(took)} timed tests: "
        f"setup + call >= {args.seconds:g} s);\n# made by scripts/slow_tests.py from a full "
        "run's --durations=0 (its docstring)\n" + "\n".join(slow) + "\n")
    print(f"{len(slow)} of {len(took)} tests slow -> {args.out}")


if __name__ == "__main__":
    main()
