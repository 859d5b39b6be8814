"""Every entry point has run's signal contract (issue 76): Ctrl-C or SIGTERM during the
imports and the work of ``slurm submit --dry-run`` and ``data stats`` ends in one line, exit
130 / 143 (or the command's own status when it finished first), never a traceback or a
silent -15."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness.conftest import tiny_table

ROOT = Path(__file__).resolve().parents[1]


def _commands(tmp_path):
    table = tiny_table(tmp_path)
    return {"slurm": [sys.executable, "-m", "tff_idp.slurm", "submit", str(table), "--scale",
                      "smoke", "--dry-run"],
            "data": [sys.executable, "-m", "tff_idp.data", "stats", "digits"]}


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


@pytest.mark.parametrize("entry", ["slurm", "data"])
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
    if proc.poll() is None:
        proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    lines = [l for l in err.splitlines() if l.strip()]
    assert "Traceback" not in err, err
    if proc.returncode == 0:                       # done before the signal: a normal end
        return
    assert proc.returncode == 128 + signum, (proc.returncode, err)
    assert len(lines) == 1 and lines[0].startswith(f"stopped by {signum.name}"), err
