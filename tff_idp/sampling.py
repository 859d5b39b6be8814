"""Per-round cohort selection.

``poisson``: every client of group m joins independently with probability q_m (the mechanism
the RDP/PLD accounting assumes by default). ``fixed``: round(q_m |G_m|) clients of group m
drawn without replacement (GDPFed Alg. 1 line 4; accounted with replace-one neighbours).
"""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

SAMPLINGS = ("poisson", "fixed")      # the config key ``sampling``


def sample_cohort(rng: np.random.Generator, members: Sequence[np.ndarray],
                  rates: Sequence[float], mode: str = "poisson") -> List[np.ndarray]:
    """Client ids sampled from each group (``members[m]`` holds group m's client ids)."""
    out = []
    for ids, q in zip(members, rates):
        ids = np.asarray(ids)
        if mode == "poisson":
            out.append(ids[rng.random(len(ids)) < q])
        elif mode == "fixed":
            k = min(len(ids), max(1, int(round(q * len(ids))))) if q > 0 else 0
            out.append(np.sort(rng.choice(ids, size=k, replace=False)))
        else:
            raise ValueError(f"sampling={mode!r} is not one of {SAMPLINGS}")
    return out
