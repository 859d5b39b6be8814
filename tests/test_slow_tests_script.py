"""scripts/slow_tests.py (the list the fast tier leaves out): made anew from a run's
durations, or kept and added to (``--add``), dropping listed tests a full run did not time
only when asked (``--forget-untimed``); the header counts what the file lists."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LOG = """\
============================= slowest durations ==============================
5.10s call     tests/a.py::test_slow
2.00s setup    tests/a.py::test_slow_with_setup
1.50s call     tests/a.py::test_slow_with_setup
0.40s teardown tests/a.py::test_slow_with_setup
2.90s call     tests/b.py::test_fast[x-1]
9.00s teardown tests/b.py::test_slow_teardown_only
"""


def _script(tmp_path, *args):
    log = tmp_path / "suite.log"
    log.write_text(LOG)
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "slow_tests.py"), str(log),
                           "--out", str(tmp_path / "slow.txt"), *args],
                          capture_output=True, text=True, timeout=120)


def _listed(tmp_path):
    lines = (tmp_path / "slow.txt").read_text().splitlines()
    return lines[:2], [line for line in lines if not line.startswith("#")]


def test_a_run_makes_the_list_anew_from_setup_and_call(tmp_path):
    (tmp_path / "slow.txt").write_text("# old\ntests/old.py::test_gone\n")
    done = _script(tmp_path)
    assert done.returncode == 0, done.stderr
    head, listed = _listed(tmp_path)
    assert listed == ["tests/a.py::test_slow", "tests/a.py::test_slow_with_setup"]
    assert "2 of the 3 timed tests" in head[0]       # a teardown is not counted


def test_add_keeps_the_listed_tests_and_forgets_only_untimed_ones_when_asked(tmp_path):
    (tmp_path / "slow.txt").write_text("# old header\ntests/b.py::test_fast[x-1]\n"
                                       "tests/old.py::test_gone\n")
    done = _script(tmp_path, "--add")
    assert done.returncode == 0, done.stderr
    head, listed = _listed(tmp_path)
    assert listed == ["tests/a.py::test_slow", "tests/a.py::test_slow_with_setup",
                      "tests/b.py::test_fast[x-1]", "tests/old.py::test_gone"]
    assert "(4 tests:" in head[0] and "2 added to 2 listed" in done.stdout
    done = _script(tmp_path, "--add", "--forget-untimed")
    head, listed = _listed(tmp_path)
    assert "tests/old.py::test_gone" not in listed and len(listed) == 3
    assert "(3 tests:" in head[0] and "1 not timed dropped" in done.stdout


def test_forgetting_without_add_is_one_line_exit_2_and_writes_nothing(tmp_path):
    done = _script(tmp_path, "--forget-untimed")
    assert done.returncode == 2 and "--forget-untimed" in done.stderr.splitlines()[-1]
    assert not (tmp_path / "slow.txt").exists()
