"""A lower bound on what a run holds in memory, checked before any work: a config
that cannot fit is refused in one line with the estimate and the machine's memory, instead
of growing until the kernel kills it. No TensorFlow.

Counted (bytes): the data set as float32 arrays; each round's training plan for the expected
cohort, q_max n clients x local_steps x batch_size positions (int64 order, int32 position and
float32 weight per example-step: 16 bytes, ``data.client_dataset.padded_order``); and the
examples a chunk of min(cohort, fast_chunk_size) clients gathers for its local steps, as
float32. Model weights, activations and TensorFlow's own memory come on top: the estimate
only refuses what certainly cannot fit.
"""
from __future__ import annotations

import math
import os

import numpy as np

PLAN_BYTES_PER_STEP = 16
REFUSE_ABOVE = 0.9          # of the machine's memory


def machine_memory_bytes() -> int:
    """Physical memory, or the cgroup's limit when that is smaller (a Slurm job's --mem)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            raw = open(path).read().strip()
        except OSError:
            continue
        if raw.isdigit():
            total = min(total, int(raw))
    return int(total)


def estimate_bytes(cfg, data, rates) -> dict:
    """{"data", "plan", "chunk", "total"} in bytes for ``cfg`` on ``data`` with per-group
    sampling rates ``rates`` (the largest one taken for the whole cohort)."""
    example = 4 * int(np.prod(data.x_train.shape[1:]) if data.x_train.ndim > 1 else 1)
    data_bytes = example * (len(data.x_train) + len(data.x_test))
    cohort = max(1, math.ceil(max(rates) * cfg.num_clients)) if len(rates) else 1
    steps = cfg.local_steps * cfg.batch_size
    if cfg.local_epochs is not None:      # epochs over a client's share of the examples
        steps = cfg.local_epochs * max(1, len(data.x_train) // max(cfg.num_clients, 1))
    plan = cohort * steps * PLAN_BYTES_PER_STEP
    chunk = min(cohort, cfg.fast_chunk_size) * steps * example
    return {"data": data_bytes, "plan": plan, "chunk": chunk,
            "total": data_bytes + plan + chunk}


def _gb(b: float) -> str:
    return f"{b / 2 ** 30:.3g} GB"


def _refuse_beyond(need: dict, have, why) -> None:
    """ConfigError (one line) when ``need["total"]`` exceeds 90% of ``have`` (default: the
    machine's memory); ``why(need)`` says what needs it."""
    from ..errors import ConfigError
    have = machine_memory_bytes() if have is None else have
    if need["total"] > REFUSE_ABOVE * have:
        raise ConfigError(f"{why(need)}; this machine has {_gb(have)}")


def check_fits(cfg, data, rates, have: int = None) -> None:
    """ConfigError (one line) when :func:`estimate_bytes` exceeds 90% of the memory."""
    _refuse_beyond(estimate_bytes(cfg, data, rates), have, lambda need: (
        f"local_steps={cfg.local_steps}, batch_size={cfg.batch_size}: a round needs at "
        f"least {_gb(need['total'])} (data {_gb(need['data'])}, the cohort's training plan "
        f"{_gb(need['plan'])}, a chunk's examples {_gb(need['chunk'])})"))


def canary_bytes(canaries: int, parameters: int, rate: float) -> dict:
    """{"signs", "round", "total"} in bytes of the canary audit (``audit.canaries``): every
    canary's sign bits (m ceil(d / 8)), and a round's participating canaries' updates as
    float32 in three copies (directions, updates, the backend's tensor), for the inserted
    half sampled at ``rate``, six standard deviations above its mean."""
    inserted = canaries / 2
    k = min(inserted, inserted * rate + 6 * math.sqrt(inserted * rate * (1 - rate)) + 1)
    signs = canaries * math.ceil(parameters / 8)
    per_round = 3 * 4 * k * parameters
    return {"signs": signs, "round": per_round, "total": signs + per_round}


def check_canaries_fit(cfg, parameters: int, rate: float, have: int = None) -> None:
    """ConfigError (one line, before anything is written) when the canary audit alone
    exceeds 90% of the memory (:func:`canary_bytes`)."""
    _refuse_beyond(canary_bytes(cfg.audit_canaries, parameters, rate), have, lambda need: (
        f"audit_canaries={cfg.audit_canaries}: the audit needs at least {_gb(need['total'])} "
        f"on {cfg.model!r} ({parameters:,} parameters: the canaries' signs "
        f"{_gb(need['signs'])}, a round's updates {_gb(need['round'])})"))


def reset_peak_rss() -> bool:
    """Start a new peak of this process's resident memory (Linux: writing 5 to
    /proc/self/clear_refs resets VmHWM to the current resident size, since Linux 4.0), so
    a run in a process that ran others reports its own peak. False where that is not
    possible (the peak is then the process's)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes() -> int:
    """This process's peak resident memory (VmHWM) since it started or since
    :func:`reset_peak_rss`, in bytes; ru_maxrss where /proc is not readable."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource
    import sys
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)
