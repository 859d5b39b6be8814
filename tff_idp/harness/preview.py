"""What ``python -m tff_idp.run TABLE --scale S --dry-run`` says before any work: which of
the table's runs are complete, which an equal complete run stands in for (copied when the
table runs: :mod:`harness.reuse`), which would train (from the start, or from the round of
their checkpoint; one whose lock a live process holds is marked as training now), and how
long those would take:

* here, at the pace of the complete runs it can time: model FLOPs per second of wall time
  (training, evaluation and start-up; FLOPs by :func:`harness.cost.unit_cost`), over the
  runs made on this kind of machine (CPU model and cores, or GPUs) when there are any, else
  over all of them, naming where they ran; a unit's time is its FLOPs still to do over that
  rate, for one process (``--jobs N`` runs N at once, each slower when they share cores);
* on one GPU by the cost model (:mod:`harness.cost`: an assumption, stated there).

It reads only: nothing is trained, copied, locked or written, and a checkpoint that would be
set aside is merely not counted (``engine.checkpoint.checkpoint_round``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional, Set

from ..atomic import lock_holder, regular_file
from .table import Unit


def _timed_run(folder: Path) -> Optional[dict]:
    """{"wall": seconds, "kinds": {kind of machine}} of a finished run's summary.json, or
    None when it does not read or records no time."""
    from ..engine.segments import kind, of_summary
    from ..results.summary import RunSummary
    try:
        s = RunSummary.from_dict(json.loads(regular_file(folder / "summary.json").read_text()))
        wall = s.seconds_wall if s.seconds_wall is not None else s.seconds_total + s.seconds_eval
        kinds = {kind(seg["machine"]) for seg in of_summary(s) if seg.get("machine")}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {"wall": float(wall), "kinds": kinds} if wall and wall > 0 else None


def _pace(whole: List[Unit], not_done: Set[str], found: Dict[str, Path]) -> tuple:
    """(FLOPs per second of wall time or None, how many runs it is over, the kinds of
    machine they ran on, whether that is this machine's kind, this machine's kind): over the
    finished runs of ``whole`` (complete here: not in ``not_done``, or an equal run
    ``found`` elsewhere) made on this kind of machine when there are any, else over all of
    them."""
    from ..engine.segments import cpu_model, kind, usable_cores
    from . import cost
    timed = []          # (FLOPs, wall seconds, kinds) of every finished run it can time
    for u in whole:
        folder = found.get(u.label, None if u.label in not_done else u.folder)
        t = _timed_run(folder) if folder is not None else None
        if t is not None:
            timed.append((cost.unit_cost(u.cfg)["flops"], t["wall"], t["kinds"]))
    here = kind({"cpu": cpu_model(), "cores": usable_cores()})   # runs on GPUs: another kind
    same = [t for t in timed if t[2] == {here}]
    pool = same or timed
    if not pool:
        return None, 0, [], False, here
    kinds = sorted(set().union(*(t[2] for t in pool)))
    return (sum(t[0] for t in pool) / sum(t[1] for t in pool), len(pool), kinds, bool(same),
            here)


def preview(spec, scale: str, units: List[Unit], output_dir: Optional[str] = None,
            force: bool = False, whole: Optional[List[Unit]] = None) -> str:
    """The dry run's text for ``units`` of ``spec`` at ``scale`` (module docstring);
    ``force``: every unit trains from the start, as ``run --force`` would; ``whole``: the
    whole table's units (``units`` may be part of it: --only, --axis, ...), whose finished
    runs set the pace (default ``units``)."""
    from ..engine.checkpoint import checkpoint_round
    from ..engine.fingerprint import run_fingerprint
    from . import cost
    from .reuse import equal_runs, search_roots
    from .runner import duration_text, pending
    whole = units if whole is None else whole
    not_done = {u.label for u in pending(whole)}      # the table's, read once: the choice's
    found_all = equal_runs([u for u in whole if u.label in not_done],   # and the pace's
                           search_roots(spec, scale, output_dir))
    missing = list(units) if force else [u for u in units if u.label in not_done]
    found = {} if force else {u.label: found_all[u.label] for u in missing
                              if u.label in found_all}
    train = [u for u in missing if u.label not in found]
    lines = [f"{spec.name} at scale {scale}, dry run (nothing trained, copied or written): "
             f"{len(units)} runs",
             f"  complete: {len(units) - len(missing)}" + (" (--force: trained again)"
                                                            if force else ""),
             f"  to copy: {len(found)} (an equal complete run in runs/archive/ or another "
             "table's folders)",
             f"  to train: {len(train)}"]
    if not train:
        return "\n".join(lines)
    rate, timed, kinds, same, here = _pace(whole, not_done, found_all)
    left, gpu, rows = 0.0, 0.0, []
    for u in train:
        start = 0 if force else (checkpoint_round(
            u.partial, run_fingerprint(u.cfg, u.method)) or 0)
        share = max(u.cfg.rounds - start, 0) / u.cfg.rounds
        c = cost.unit_cost(u.cfg)
        gpu += share * c["gpu_seconds"]
        where = f"from round {start} of {u.cfg.rounds}" if start else \
            f"{u.cfg.rounds} rounds from the start"
        holder = lock_holder(u.folder)
        if holder:                                  # another process trains it now
            where += f" (training now: {holder})"
        est = ""
        if rate:
            left += share * c["flops"] / rate
            est = f"~{duration_text(share * c['flops'] / rate)}"
        rows.append((u.label, where, est))
    width, tall = (max(len(r[i]) for r in rows) for i in (0, 1))
    lines += [f"    {a:<{width}}  {b:<{tall}}  {e}".rstrip() for a, b, e in rows]
    if rate:
        basis = (f"this kind of machine ({here})" if same else
                 f"{'; '.join(kinds) or 'machines not recorded'} (this machine: {here})")
        lines.append(f"  here: ~{duration_text(left)} summed over the runs (N at once, --jobs N: "
                     f"that over N at best), at the pace the {timed} finished "
                     f"run{'s' if timed != 1 else ''} kept on "
                     f"{basis}:")
        lines.append(f"    {rate / 1e9:.1f} GFLOP/s of each one's wall time (training, "
                     "evaluation, start-up), its cores shared with whatever ran beside it")
    else:
        lines.append("  here: no finished run of the table to time them by")
    lines.append(f"  on one {cost.GPU_NAME}: ~{duration_text(gpu)} by the cost model "
                 "(an assumption: tff_idp/harness/cost.py)")
    return "\n".join(lines)
