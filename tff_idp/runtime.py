"""TFF runtime set-up and shutdown.

Importing TFF installs a C++ execution context that starts a ``worker_binary`` subprocess
on first use. If Python exits without stopping it, the worker is orphaned and keeps the
inherited stdout open (pipes and CI hang). :func:`close_tff` stops every worker this process
started; it is registered with ``atexit`` by :func:`import_tff` and is called by every entry
point in a ``finally`` block and by the test session.
"""
from __future__ import annotations

import atexit
import contextlib
import gc
import os
import signal
import subprocess
import sys

_registered = False


def quiet_tf_logs():
    """TensorFlow's C++ log below FATAL off (unless the user set a level): TF 2.14 prints
    spurious cuDNN/cuBLAS registration "errors" at import, which would turn a one-line
    refusal into four lines. Its Python logger too, down to errors (retracing notices of
    tf.functions whose shapes change between rounds are not the user's concern)."""
    import logging
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def in_lanes_on_cpu(cfg) -> bool:
    """Whether ``cfg`` runs the fast backend in ``fast_lanes`` > 1 lanes off a GPU, one
    thread per operation (:func:`one_thread_per_op_for_lanes`)."""
    return cfg.backend == "fast" and cfg.fast_lanes > 1 and cfg.device != "gpu"


def one_thread_per_op_for_lanes(cfgs) -> bool:
    """``fast_lanes`` > 1 off a GPU: TensorFlow's intra-op threads set to 1
    (``TF_NUM_INTRAOP_THREADS``, read when TensorFlow's runtime starts, so before any
    operation runs; a value the user set is kept), so that each of the lanes' operations
    runs on its own inter-op thread, one core each, instead of two lanes' operations sharing
    one pool (docs/backends.md, "Lanes": a Shakespeare round of 75 s in chunks of 8 in 2
    lanes, against 103 s in chunks of 4 at TensorFlow's default). Called by ``run``,
    ``bench`` and ``harness.task``. Returns whether it set the value."""
    if not any(in_lanes_on_cpu(c) for c in cfgs):
        return False
    if "TF_NUM_INTRAOP_THREADS" in os.environ:
        return False
    os.environ["TF_NUM_INTRAOP_THREADS"] = "1"
    return True


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


def exit_cleanly_on_sigterm() -> None:
    """SIGTERM (``kill``, ``timeout``, Slurm's preemption and time limit) ends Python without
    running ``finally`` blocks or ``atexit``, which orphans TFF's worker. Turn it into
    SystemExit so they run. Only from the main thread and only over the default handler."""
    import threading
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _exit_on_sigterm)


def _drop_unraisable(unraisable) -> None:
    """``sys.unraisablehook`` once a stop is requested (:class:`StopRequests`)."""


def _importing(frame) -> bool:
    """Whether ``frame`` runs inside an import: one of its callers is the import system's
    (``<frozen importlib._bootstrap>``, present in the stack for every ``import``, also one
    a C extension starts)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib."):
            return True
        frame = frame.f_back
    return False


class StoppedInStartUp(Exception):
    """A stop request (Ctrl-C, SIGTERM) arrived while no checkpoint was at stake."""


class StopRequests:
    """``with StopRequests() as stop:`` the first SIGINT (Ctrl-C) or SIGTERM (``kill``,
    Slurm's preemption and time limit) only sets ``stop.signum``: the round loop finishes
    the round, writes a checkpoint and exits 130 / 143 with one line. A second signal stops
    at once (KeyboardInterrupt / SystemExit). Inside ``with stop.immediately():`` (start-up
    steps, reports: nothing to checkpoint) the first signal raises
    :class:`StoppedInStartUp` at once, wherever the process is, also in a blocking read
    (in an import: as soon as it ends). Only in the main thread (elsewhere a no-op)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)
    _active = None               # the installed one: nested uses share it

    def __init__(self):
        self._signum = None
        self._previous = {}
        self._immediate = 0
        self._alarm = None           # (SIGALRM's handler, its timer) while a stop waits

    @property
    def signum(self):
        return self._signum

    @signum.setter
    def signum(self, signum):
        """A stop is requested (by a signal, or one recorded during the imports): from here
        on the interpreter's "Exception ignored in ..." reports are dropped. They come from
        objects the stop left half-built (a stop inside a package's import: pyparsing's
        ``Forward.__del__`` under pkg_resources), printed as tracebacks when collected; the
        process is ending and says so in its one line."""
        self._signum = signum
        if signum is not None:
            sys.unraisablehook = _drop_unraisable

    def _handle(self, signum, frame):
        if self.signum is not None:          # asked twice: stop now
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise SystemExit(128 + signum)
        self.signum = signum
        self._stop_now(frame)

    def _stop_now(self, frame):
        """In an immediate block, raise the stop, unless a module is being imported: a stop
        raised mid-import is caught or printed by the importer, often a C extension (seen:
        ml_dtypes' module init prints the traceback with ``PyErr_Print``, breaking the
        one-line stop), or swallowed by a package's ``except Exception``. Then the stop is
        retried every 50 ms (SIGALRM) and raised as soon as no import is under way."""
        if not self._immediate:
            return
        if not _importing(frame):
            self._disarm()
            raise StoppedInStartUp
        if self._alarm is None:
            self._alarm = (signal.signal(signal.SIGALRM, self._retry),
                           signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05))

    def _retry(self, signum, frame):
        self._stop_now(frame)

    def _disarm(self):
        """The retry timer off, SIGALRM's handler and timer given back as they were."""
        if self._alarm is not None:
            handler, (delay, interval) = self._alarm
            self._alarm = None
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, handler)
            if delay or interval:
                signal.setitimer(signal.ITIMER_REAL, delay, interval)

    @contextlib.contextmanager
    def immediately(self):
        """A block with nothing to checkpoint: a stop request ends it at once (a request
        already pending, too). The cyclic garbage collector is paused in the block: a stop
        raised while a collector callback runs (jax registers one) is printed as "Exception
        ignored" and lost, and the block would go on. A stop during an import in the block
        waits for the import to end (``_stop_now``)."""
        if self.signum is not None:
            raise StoppedInStartUp
        import gc
        collecting = gc.isenabled() and not self._immediate
        if collecting:
            gc.disable()
        self._immediate += 1
        try:
            yield self
        finally:
            self._immediate -= 1
            if not self._immediate:
                self._disarm()
            if collecting:
                gc.enable()

    def __enter__(self):
        import threading
        if StopRequests._active is not None:     # an entry point installed one already
            return StopRequests._active
        if threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                self._previous[s] = signal.signal(s, self._handle)
            StopRequests._active = self
        return self

    def __exit__(self, *exc):
        self._disarm()
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        if StopRequests._active is self:
            StopRequests._active = None
        return False

    @property
    def exit_status(self) -> int:
        return 128 + int(self.signum)


def run_stoppable(main, argv=None, early=()) -> int:
    """An entry point with nothing to checkpoint (``slurm``, ``data``, ``report``...) under
    ``run``'s signal contract: a Ctrl-C or SIGTERM at any moment, also during its imports
    (``early``: signals the module recorded before this call) ends it with one line and exit
    status 130 / 143, never a traceback and never a silent -15. Whatever the signal
    interrupted was written atomically or not at all (the callers' writers)."""
    with StopRequests() as stop:
        if early and stop.signum is None:
            stop.signum = early[0]
        try:
            with stop.immediately():
                status = main(argv)
        except (StoppedInStartUp, KeyboardInterrupt):
            status = None
        except Exception:
            if stop.signum is None:
                raise
            status = None      # a library turned the stop into an error of its own (a
            # module left half-imported by the stop fails its next import with another one)
        if status is not None:         # its own end (a stop after it changes nothing),
            return status              # or a stop it reported itself
        signum = stop.signum or signal.SIGINT
        print(f"stopped by {signal.Signals(signum).name}; nothing was left half-written",
              file=sys.stderr)
        return 128 + int(signum)


def exit_quietly(status: int) -> None:
    """``sys.exit(status)`` for an entry point's ``__main__``, with SIGINT and SIGTERM
    ignored from here on: the work is over and the interpreter's finalization resets the
    entry point's handlers to the default action, under which a signal in the last moments
    killed the finished process silently (exit -2 / -15, no line)."""
    for s in StopRequests.SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    sys.exit(status)


def stop_requested() -> bool:
    """A stop request (Ctrl-C, SIGTERM) is pending: long work checks it between its steps."""
    return StopRequests._active is not None and StopRequests._active.signum is not None


def import_tff():
    """Import tensorflow_federated with its worker guaranteed to be stopped at exit, and to
    die with this process even when it is killed with SIGKILL (no exit code runs then)."""
    global _registered
    quiet_tf_logs()
    import tensorflow_federated as tff  # noqa: F401  (heavy import, done once)
    if not _registered:
        atexit.register(close_tff)
        exit_cleanly_on_sigterm()
        _workers_die_with_parent()
        _registered = True
    return tff


def with_parent_death(command, signum: int = signal.SIGKILL) -> list:
    """``command`` (a list) wrapped so that the process it starts is sent ``signum`` when
    this process's starting thread ends (Linux's parent-death signal; ``exec_with_parent_death``
    arms it and execs the command in the same pid). No Python runs in the forked child, unlike
    a ``preexec_fn``, which can crash or deadlock a child forked from a threaded process."""
    import sys
    launcher = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "exec_with_parent_death.py")
    return [sys.executable, "-I", "-S", launcher, str(os.getpid()), str(int(signum)),
            *[str(a) for a in command]]


class WorkerStartError(RuntimeError):
    """TFF's worker_binary exited before it answered: TFF itself would wait for it forever."""


# how long a TFF worker may take to exit after TFF's SIGINT before it is killed
WORKER_STOP_SECONDS = 30.0


def _workers_die_with_parent() -> None:
    """TFF starts ``worker_binary`` with ``subprocess.Popen`` in its executor factory, then
    polls ``time.sleep`` until the worker answers, with no limit. Give that module (only) a
    Popen that starts the worker with the parent-death signal set (Linux only), and a sleep
    that raises ``WorkerStartError`` when the worker it waits for has exited. The kernel sends
    the signal when the *thread* that started the worker ends: TFF starts it from its
    event-loop thread ("target_fn"), which lives as long as the process (checked: one worker
    pid across successive computations)."""
    import sys
    import time
    import types
    if not sys.platform.startswith("linux"):
        return
    from tensorflow_federated.python.core.impl.executor_stacks import executor_factory
    started = []

    class _Popen(subprocess.Popen):
        def __init__(self, args, *rest, **kwargs):
            super().__init__(with_parent_death(args), *rest, **kwargs)
            started[:] = [self]

        def wait(self, timeout=None):
            """TFF stops a worker with SIGINT and an unbounded wait (at garbage collection
            too): a worker that outlives SIGINT by :data:`WORKER_STOP_SECONDS` is killed
            rather than waited for."""
            if timeout is not None:
                return super().wait(timeout)
            try:
                return super().wait(WORKER_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.kill()
                return super().wait()

    def _sleep(seconds):
        if started and started[-1].poll() is not None:
            raise WorkerStartError(
                f"TFF's worker_binary (pid {started[-1].pid}) exited with status "
                f"{started[-1].returncode} before it answered")
        time.sleep(seconds)

    shim = types.ModuleType("subprocess")
    shim.__dict__.update(subprocess.__dict__)
    shim.Popen = _Popen
    executor_factory.subprocess = shim
    clock = types.ModuleType("time")
    clock.__dict__.update(time.__dict__)
    clock.sleep = _sleep
    executor_factory.time = clock


def _child_workers():
    """PIDs of worker_binary processes whose parent is this process (Linux /proc)."""
    me, found = os.getpid(), []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for pid in entries:
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != me:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"worker_binary" in f.read():
                    found.append(int(pid))
        except (OSError, ValueError, IndexError):
            continue
    return found


def close_tff() -> int:
    """Stop the TFF C++ worker(s) started by this process. Returns how many were stopped."""
    stopped = 0
    for obj in gc.get_objects():
        try:
            if type(obj).__name__ != "ServiceManager":
                continue
            proc = getattr(obj, "_process", None)
        except Exception:  # noqa: BLE001 (foreign objects during gc walk)
            continue
        if isinstance(proc, subprocess.Popen) and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            stopped += 1
        if isinstance(proc, subprocess.Popen):
            obj._process = None
            obj._stub = None
        # its __del__ would run at interpreter shutdown, when the subprocess module is
        # already torn down, and print an ignored AttributeError; the worker is handled here
        type(obj).__del__ = lambda self: None
    for pid in _child_workers():      # anything the walk missed
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            stopped += 1
        except (OSError, ChildProcessError):
            pass
    return stopped


DEVICES = ("auto", "cpu", "gpu")      # the config key ``device``


def select_device(choice: str):
    """The TensorFlow device of ``device = choice``: 'gpu' needs a GPU TensorFlow can see
    (a one-line ConfigError otherwise); 'auto' leaves placement to TensorFlow (a GPU when
    present, None here); 'cpu' pins the CPU. Shared by ``run`` and the table runner."""
    from .errors import ConfigError
    if choice == "auto":
        return None
    import tensorflow as tf
    if choice == "gpu" and not tf.config.list_physical_devices("GPU"):
        raise ConfigError("device='gpu': TensorFlow sees no GPU on this machine")
    return "/GPU:0" if choice == "gpu" else "/CPU:0"
