"""Child processes (TFF's worker_binary, the harness's task processes) die with their parent,
and a worker that exits before it answers is an error, not an endless wait."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tff_idp.runtime import with_parent_death


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal: Linux")
def test_a_wrapped_command_dies_when_its_parent_is_killed(tmp_path):
    """The parent is a threaded Python process (as a TensorFlow one is) that starts `sleep`
    through the launcher, then is killed with SIGKILL: no exit code of it runs, yet the sleep
    is gone. The same `sleep` started without the wrapper outlives it (the test can fail)."""
    script = textwrap.dedent(f"""
        import subprocess, sys, threading, time
        sys.path.insert(0, {str(os.getcwd())!r})
        from tff_idp.runtime import with_parent_death
        for _ in range(8):
            threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        guarded = subprocess.Popen(with_parent_death(["sleep", "60"]))
        bare = subprocess.Popen(["sleep", "61"])
        print(guarded.pid, bare.pid, flush=True)
        time.sleep(60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    guarded, bare = (int(p) for p in parent.stdout.readline().split())
    try:
        deadline = time.time() + 20      # the launcher execs `sleep` in the same pid
        while time.time() < deadline:
            with open(f"/proc/{guarded}/cmdline", "rb") as f:
                if f.read().startswith(b"sleep"):
                    break
            time.sleep(0.05)
        assert _alive(guarded) and _alive(bare)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.time() + 10
        while _alive(guarded) and time.time() < deadline:
            time.sleep(0.05)
        assert not _alive(guarded), "the wrapped command outlived its killed parent"
        assert _alive(bare), "control: an unwrapped child should outlive its parent"
    finally:
        for pid in (guarded, bare):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_the_launcher_refuses_a_parent_already_gone():
    """Started with a parent pid that is not its parent, the launcher never runs the command."""
    wrapped = with_parent_death(["echo", "ran"], signal.SIGTERM)
    wrapped[4] = "1" if os.getpid() != 1 else "2"       # the PARENT_PID argument
    out = subprocess.run(wrapped, capture_output=True, text=True, timeout=30)
    assert "ran" not in out.stdout
    assert out.returncode == -signal.SIGTERM


def test_a_tff_worker_that_exits_before_answering_is_an_error():
    """TFF polls time.sleep until its worker answers, without limit; the guard installed by
    import_tff raises once the worker process it waits for has exited."""
    from tff_idp.runtime import WorkerStartError, import_tff
    import_tff()
    from tensorflow_federated.python.core.impl.executor_stacks import executor_factory
    proc = executor_factory.subprocess.Popen(["false"])
    proc.wait(timeout=30)
    with pytest.raises(WorkerStartError, match="exited with status 1 before it answered"):
        executor_factory.time.sleep(0.01)
    proc = executor_factory.subprocess.Popen(["sleep", "5"])   # running: sleep is a sleep
    try:
        executor_factory.time.sleep(0.01)
    finally:
        proc.kill()
        proc.wait()


def test_a_worker_that_ignores_sigint_is_killed_rather_than_waited_for(monkeypatch):
    """TFF's ServiceManager sends SIGINT, then waits without limit (also when it is garbage
    collected, inside any test): the shim's wait kills a worker still alive after
    ``runtime.WORKER_STOP_SECONDS`` (30 s; 3 s here)."""
    from tff_idp import runtime
    from tff_idp.runtime import import_tff
    assert runtime.WORKER_STOP_SECONDS == 30.0
    monkeypatch.setattr(runtime, "WORKER_STOP_SECONDS", 3.0)
    import_tff()
    from tensorflow_federated.python.core.impl.executor_stacks import executor_factory
    proc = executor_factory.subprocess.Popen(["sh", "-c", "trap '' INT; exec sleep 120"])
    time.sleep(1.0)                        # past the launcher, into sh's trap
    os.kill(proc.pid, signal.SIGINT)
    start = time.monotonic()
    status = proc.wait()
    assert status == -signal.SIGKILL and 2.5 < time.monotonic() - start < 30
