"""Where a run's rounds were trained: one record per process that trained some of them.

A run stopped and resumed (a SIGTERM at a session's end, a Slurm job requeued on another
node) is trained by several processes, perhaps on several machines and devices. Each row
of metrics.csv times its own round, but not where it ran, and summary.json's ``machine`` is
the last process's. So every process adds a *segment* ({"rounds": [first, last], the
training and evaluation seconds of those rounds, the process's CPU seconds, and its
machine: host, boot id, CPU model, cores, intra-op threads, device, GPUs}); the segments
travel in the checkpoint and end in summary.json's ``segments``, and the report says on
how many machines a table's time was measured (``report.cost_lines``).

Two processes of one machine share its boot id; two machines made from one image may
share a host name and /etc/machine-id but not a boot id, so (host, boot) is what counts as
one machine (a machine rebooted counts twice). Rounds trained by code from before segments
were recorded (a checkpoint without them) form one segment with ``"machine": null``.
"""
from __future__ import annotations

import os
import platform
import socket
import time
from pathlib import Path
from typing import List, Optional

from ..results.summary import RunSummary


def _read(path: str) -> Optional[str]:
    try:
        return Path(path).read_text().strip() or None
    except OSError:
        return None


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what ``platform`` says."""
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown"


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the OS has one (a Slurm
    job's cpuset, ``taskset``; what TensorFlow sizes its default thread pools by), else
    the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def machine(device: str) -> dict:
    """Where this process runs: host, boot id, CPU model, the cores it may use
    (:func:`usable_cores`; ``host_cores`` the machine's), TensorFlow's intra-op
    threads (``TF_NUM_INTRAOP_THREADS``; "default" when unset), the device asked for and
    the GPUs TensorFlow sees (names)."""
    import tensorflow as tf
    gpus = []
    for g in tf.config.list_physical_devices("GPU"):
        try:
            gpus.append(tf.config.experimental.get_device_details(g).get("device_name", g.name))
        except (ValueError, RuntimeError):
            gpus.append(g.name)
    boot = _read("/proc/sys/kernel/random/boot_id")
    return {"host": socket.gethostname(), "boot": boot[:8] if boot else None,
            "cpu": cpu_model(), "cores": usable_cores(), "host_cores": os.cpu_count(),
            "intra_op_threads": os.environ.get("TF_NUM_INTRAOP_THREADS", "default"),
            "device": device, "ran_on": "gpu" if gpus and device != "cpu" else "cpu",
            "gpus": gpus}


def _seconds(rows: List[dict], key: str) -> float:
    return round(sum(float(r[key]) for r in rows if r.get(key) not in (None, "")), 4)


class SegmentLog:
    """This process's segment after the ``earlier`` ones (from the checkpoint it resumed,
    or None): :meth:`upto` gives every segment once this process has trained the rows after
    ``first_row``."""

    def __init__(self, device: str, rows_before: List[dict],
                 earlier: Optional[List[dict]] = None):
        self.first_row = len(rows_before)
        if earlier is None:
            earlier = [] if not rows_before else [{   # a checkpoint from before segments
                "rounds": [1, len(rows_before)],
                "seconds": _seconds(rows_before, "seconds"),
                "eval_seconds": _seconds(rows_before, "eval_seconds"),
                "cpu_seconds": None, "machine": None}]
        self.earlier = [dict(s) for s in earlier]
        self.machine = machine(device)
        self.cpu_start = time.process_time()

    def upto(self, rows: List[dict]) -> List[dict]:
        """Every segment, this process's covering ``rows[first_row:]`` (none if empty)."""
        mine = rows[self.first_row:]
        if not mine:
            return [dict(s) for s in self.earlier]
        return [dict(s) for s in self.earlier] + [{
            "rounds": [self.first_row + 1, len(rows)],
            "seconds": _seconds(mine, "seconds"),
            "eval_seconds": _seconds(mine, "eval_seconds"),
            "cpu_seconds": round(time.process_time() - self.cpu_start, 2),
            "machine": self.machine}]


def kind(m: dict) -> str:
    """What trains on ``m``: its GPUs' names when it ran on them, else CPU model and cores."""
    return (", ".join(m["gpus"]) if m.get("ran_on") == "gpu" and m.get("gpus")
            else f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores")


def describe(m: dict) -> str:
    """One line for a timing's reader: the kind of machine, intra-op threads, host and boot."""
    return (f"on {kind(m)}, intra-op threads {m.get('intra_op_threads', '?')}, host "
            f"{m.get('host', '?')} (boot {m.get('boot') or '?'})")


def summarise(segments: List[List[dict]]) -> dict:
    """Over the segments of several runs: processes and machines that recorded theirs, the
    rounds and training seconds on each kind of machine (CPU model and cores, or GPUs), and
    the rounds whose machine was not recorded."""
    processes, machines, kinds, unrecorded = 0, set(), {}, 0
    for run in segments:
        for s in run:
            n = s["rounds"][1] - s["rounds"][0] + 1
            m = s.get("machine")
            if m is None:
                unrecorded += n
                continue
            processes += 1
            machines.add((m.get("host"), m.get("boot")))
            k = kinds.setdefault(kind(m), {"machines": set(), "rounds": 0, "seconds": 0.0})
            k["machines"].add((m.get("host"), m.get("boot")))
            k["rounds"] += n
            k["seconds"] += float(s.get("seconds") or 0.0)
    return {"processes": processes, "machines": len(machines), "unrecorded_rounds": unrecorded,
            "kinds": {kind: {"machines": len(v["machines"]), "rounds": v["rounds"],
                             "seconds": v["seconds"]} for kind, v in kinds.items()}}


def of_summary(summary: RunSummary) -> List[dict]:
    """A finished run's segments (summary.json ``segments``); a summary written before they
    were kept, or with a malformed list, is one segment of all its rounds, machine unknown."""
    segs = summary.segments
    try:
        if isinstance(segs, list) and segs and all(
                int(s["rounds"][0]) <= int(s["rounds"][1]) and
                float(s.get("seconds") or 0.0) >= 0 and
                (s.get("machine") is None or isinstance(s["machine"], dict) and
                 all(isinstance(g, str) for g in s["machine"].get("gpus", [])))
                for s in segs):
            return segs
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        pass
    return [{"rounds": [1, int(summary.rounds or 0)],
             "seconds": summary.seconds_total, "machine": None}]
