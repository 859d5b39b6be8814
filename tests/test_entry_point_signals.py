"""Every entry point has run's signal contract (issue 76), as a matrix: each command-line
entry point (run, report, slurm submit / status / collect, data fetch / stats / build) x
SIGINT and SIGTERM x three moments (in the imports, later in them, in the work) ends in one
line, exit 130 / 143 (or the command's own status when it finished first), never a
traceback or a silent -15."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness.conftest import tiny_table
from tff_idp.methods import METHODS

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow          # 48 processes, each up to seconds: the slow tier


ENTRY_POINTS = ["run", "report", "slurm submit", "slurm status", "slurm collect",
                "data fetch", "data stats", "data build"]


def _commands(tmp_path):
    """Every command-line entry point, on the tiny digits table or the digits set. (The
    Python API installs no handler: a library leaves signals to the program that calls it.)"""
    table = str(tiny_table(tmp_path))
    py = [sys.executable, "-m"]
    root = ["--root", str(tmp_path / "data")]
    return {"run": py + ["tff_idp.run", table, "--scale", "smoke", "--quiet"],
            "report": py + ["tff_idp.report", table, "--scale", "smoke"],
            "slurm submit": py + ["tff_idp.slurm", "submit", table, "--scale", "smoke",
                                  "--dry-run"],
            "slurm status": py + ["tff_idp.slurm", "status", table, "--scale", "smoke"],
            "slurm collect": py + ["tff_idp.slurm", "collect", table, "--scale", "smoke"],
            "data fetch": py + ["tff_idp.data", "fetch", "digits"] + root,
            "data stats": py + ["tff_idp.data", "stats", "digits"],
            "data build": py + ["tff_idp.data", "build", "digits"] + root}


def _handles_sigterm(pid: int) -> bool:
    """Whether process ``pid`` catches SIGTERM (/proc/<pid>/status, SigCgt): from then on
    the package's recorder (tff_idp/__init__.py) or the entry point's handler is in place.
    Before it the interpreter is in its own start-up, where no code of ours can run."""
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    except OSError:
        pass
    return False


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
# seconds after the process starts handling SIGTERM (the interpreter's own start-up comes
# first, up to seconds on a loaded machine): in the imports, later in them, in the work
@pytest.mark.parametrize("after", [0.0, 1.0, 3.0])
def test_a_stop_is_one_line_and_its_exit_status(tmp_path, entry, signum, after):
    proc = subprocess.Popen(_commands(tmp_path)[entry], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
                                     PYTHONPATH=str(ROOT)))
    deadline = time.time() + 120
    while proc.poll() is None and not _handles_sigterm(proc.pid) and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(after)
    sent = proc.poll() is None
    if sent:
        proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    lines = [l for l in err.splitlines() if l.strip()]
    assert "Traceback" not in err, err
    if not sent or proc.returncode in (0, 1) and not any("stopped" in l for l in lines):
        return                          # done before the signal: the command's own end
    assert proc.returncode == 128 + signum, (proc.returncode, err)
    # one line says it stopped, and it is the last (a table run's header may come first,
    # and the line of the run it stopped in, "<method>: stopped at/before round r", before
    # the table's count of runs done, stopped and not started)
    stops = [l for l in lines if "stopped" in l]
    assert stops[-1:] == lines[-1:] and all(l.split(":")[0] in METHODS for l in stops[:-1]) \
        and len(stops) <= 2, err


def test_after_a_stop_request_the_interpreters_ignored_exception_reports_are_dropped():
    """A stop inside a package's import leaves objects half-built; when collected their
    ``__del__`` fails and Python prints "Exception ignored in ..." with a traceback (seen:
    pyparsing's ``Forward.__del__`` under pkg_resources, breaking the one-line stop). Once
    a stop is requested those reports are dropped; before, they are printed as ever."""
    import subprocess
    import sys
    code = ("import signal\nfrom tff_idp.runtime import StopRequests\n"
            "class Half:\n    def __del__(self):\n        raise AttributeError('expr')\n"
            "with StopRequests() as stop:\n    Half()\n    stop.signum = signal.SIGTERM\n"
            "    Half()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("Exception ignored") == 1, proc.stderr
