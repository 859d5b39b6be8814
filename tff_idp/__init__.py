"""tff-idp.

TensorFlow's CPU kernels for the gradient of a grouped convolution (the fast backend trains a
cohort's CNNs as one grouped convolution, ``engine.cohort_model``) exist only in its oneDNN
build path. TF 2.14 turns oneDNN on by default on some x86 CPUs only (not on this project's
AMD EPYC machines, where the gradient then fails with "filter_size does not have enough
elements"), so it is turned on here, before TensorFlow is imported by anything of ours; a
value the user set is kept.
"""
import os
import signal
import sys

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

# ``python -m tff_idp.<entry point>``: Python imports this package (and ``tff_idp.data`` for
# ``python -m tff_idp.data``) before the entry point's first line runs, so a Ctrl-C or
# SIGTERM in those imports would be a traceback or a silent -15. Only for such a command
# (``sys.orig_argv``: ``-m tff_idp...``; never when a program imports the library), a signal
# until then is only recorded here; the entry point's stop handling takes it over
# (``runtime.run_stoppable``, ``run.main``) and ends in one line.
EARLY_STOPS: list = []
_argv = getattr(sys, "orig_argv", [])
if "-m" in _argv[:-1] and _argv[_argv.index("-m") + 1].startswith("tff_idp"):
    for _signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_signum, lambda signum, frame: EARLY_STOPS.append(signum))


# the Python API (tff_idp.api), imported on first use: ``python -m tff_idp.run`` pays nothing
_API = ("Experiment", "RunResult", "read_run")


def __getattr__(name):
    if name in _API:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'tff_idp' has no attribute {name!r}")
