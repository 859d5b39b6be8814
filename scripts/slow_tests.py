"""Write tests/slow_tests.txt, the tests that ``scripts/test.sh --fast`` (``pytest -m "not
slow"``) leaves out, from a full run's durations:

    bash scripts/test.sh --durations=0 > /tmp/suite.log; python scripts/slow_tests.py /tmp/suite.log

A test is slow when its setup and call together took at least ``--seconds`` (default 3) in
that run. Timings here are noisy: the list is regenerated, never hand-tuned to a number.
``--add``: keep every test already listed and add the log's slow ones (a new test timed in a
run of its own, or a faster machine's full run that would otherwise drop tests slower
elsewhere); the header then counts what the list holds, not one run. ``--add
--forget-untimed``, with a full run's log: listed tests that run did not time (renamed,
parametrized anew or removed) are dropped."""
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
    p.add_argument("--add", action="store_true",
                   help="keep the tests already listed in --out; add the log's slow ones")
    p.add_argument("--forget-untimed", action="store_true",
                   help="with --add and a full run's log: drop listed tests it did not time")
    args = p.parse_args()
    if args.forget_untimed and not args.add:
        p.error("--forget-untimed: only with --add (without it the list is made anew)")
    took = defaultdict(float)
    for line in Path(args.log).read_text().splitlines():
        m = LINE.match(line)
        if m and m.group(2) != "teardown":
            took[m.group(3)] += float(m.group(1))
    if not took:
        raise SystemExit(f"error: log={args.log!r}: no durations (run pytest with --durations=0)")
    slow = {t for t, s in took.items() if s >= args.seconds}
    if args.add:
        listed = listed_tests(Path(args.out))
        gone = listed - set(took) if args.forget_untimed else set()
        added = len(slow - listed)
        slow |= listed - gone
        head = (f"# tests/conftest.py marks these slow ({len(slow)} tests: setup + call >= "
                f"{args.seconds:g} s in a run that timed them);\n# kept and added to by "
                "scripts/slow_tests.py --add (its docstring)\n")
        said = f"{added} added to {len(listed)} listed, {len(gone)} not timed dropped"
    else:
        head = (f"# tests/conftest.py marks these slow ({len(slow)} of the {len(took)} timed "
                f"tests: setup + call >= {args.seconds:g} s);\n# made by "
                "scripts/slow_tests.py from a full run's --durations=0 (its docstring)\n")
        said = f"{len(slow)} of {len(took)} tests slow"
    Path(args.out).write_text(head + "\n".join(sorted(slow)) + "\n")
    print(f"{said} -> {args.out}")


def listed_tests(path: Path) -> set:
    """The test ids ``path`` lists (not its comment lines); none when it does not exist."""
    if not path.exists():
        return set()
    return {line.strip() for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")}


if __name__ == "__main__":
    main()
