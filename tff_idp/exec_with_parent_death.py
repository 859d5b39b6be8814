"""Start a command that dies with its parent, without running Python in a forked child.

    python -I -S exec_with_parent_death.py PARENT_PID SIGNUM COMMAND [ARGS...]

sets Linux's parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGNUM)``) and replaces itself
with COMMAND (same pid; the signal setting survives ``execve``). If PARENT_PID is already gone,
it sends itself SIGNUM at once. The kernel sends the signal when the *thread* that started
this process ends.

Why a separate program rather than ``Popen(preexec_fn=...)``: a ``preexec_fn`` runs Python
between ``fork`` and ``exec`` in a copy of a many-threaded TensorFlow process, which the
``subprocess`` documentation calls unsafe. It was: a CI run (stop 66) had the child segfault
before ``exec``; the parent's ``Popen`` saw no error and TFF waited for a worker that never
started. This file is run by path with ``-I -S`` and imports only the standard library.
"""
import signal

# first: a SIGINT or SIGTERM from now on ends this process at once. Under Python's own SIGINT
# handler a signal arriving just before exec would only set a flag, which exec discards: the
# command would then run on, unaware it was asked to stop (its starter waits for it forever).
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGTERM, signal.SIG_DFL)

import ctypes  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

PR_SET_PDEATHSIG = 1


def main(argv) -> None:
    if len(argv) < 3:
        sys.exit("usage: exec_with_parent_death.py PARENT_PID SIGNUM COMMAND [ARGS...]")
    parent, signum, command = int(argv[0]), int(argv[1]), list(argv[2:])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signum) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_PDEATHSIG, {signum}): {os.strerror(err)}")
    if os.getppid() != parent:          # the parent died before the signal was armed
        os.kill(os.getpid(), signum)
        sys.exit(128 + signum)
    for name in ("SIGPIPE", "SIGXFSZ"):   # Python ignores these; the command gets the default,
        if hasattr(signal, name):          # as subprocess's restore_signals gives it
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
