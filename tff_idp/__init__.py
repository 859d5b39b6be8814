"""tff-idp.

TensorFlow's CPU kernels for the gradient of a grouped convolution (the fast backend trains a
cohort's CNNs as one grouped convolution, ``engine.cohort_model``) exist only in its oneDNN
build path. TF 2.14 turns oneDNN on by default on some x86 CPUs only (not on this project's
AMD EPYC machines, where the gradient then fails with "filter_size does not have enough
elements"), so it is turned on here, before TensorFlow is imported by anything of ours; a
value the user set is kept.
"""
import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")


# the Python API (tff_idp.api), imported on first use: ``python -m tff_idp.run`` pays nothing
_API = ("Experiment", "RunResult", "read_run")


def __getattr__(name):
    if name in _API:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'tff_idp' has no attribute {name!r}")
