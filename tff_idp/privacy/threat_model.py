"""What a run's reported epsilon is a guarantee *of*: the neighbouring relation, who draws the
noise, whom it protects against, and whether the ledger's accounting covers every release.

Every run summary carries this next to the ledger's numbers (``privacy.guarantee``), so a
reader never has to infer the trust model from the config:

- ``sampling="poisson"``: add/remove-one client (sensitivity C of a clipped sum).
- ``sampling="fixed"``: replace-one client (sensitivity 2C; the accounting halves the noise
  multiplier, :func:`tff_idp.privacy.accounting.round_event`).
- ``noise_draw="client"`` (GDPFed Alg. 1 line 13): each client adds its share of the group
  noise before anything leaves it; with secure aggregation the server sees only noised group
  sums, so the guarantee holds against an honest-but-curious server.
- ``noise_draw="group"``: the server draws each group sum's noise. The released model has the
  same distribution (a simulation's numbers are unaffected), but the server could subtract
  what it drew: the guarantee holds only against those who see the released model, with a
  trusted server (``trusted_server: true``).
- A plan with an ``accounting_gap`` (PFA with ``pfa_accounting="paper"``: the public clients'
  individually noised rows) has ``valid: false`` and the reason.
"""
from __future__ import annotations

from typing import Optional, Sequence

RELATIONS = {"poisson": "add/remove one client (the clipped sum moves by at most C)",
             "fixed": "replace one client (the clipped sum moves by up to 2C)"}


def guarantee(sampling: str, noise_draw: str, accounting_gap: Optional[str] = None,
              observed_groups: Sequence[int] = ()) -> dict:
    """The ``privacy.guarantee`` block of a run summary (see the module docstring)."""
    if sampling not in RELATIONS:
        raise ValueError(f"sampling={sampling!r} is not one of {sorted(RELATIONS)}")
    if noise_draw == "client":
        drawn_by = "each client, its share of its group's noise (GDPFed Alg. 1 line 13)"
        against = ("an honest-but-curious server that sees only the noised group sums "
                   "(secure aggregation), and everyone who sees the released model")
    elif noise_draw == "group":
        drawn_by = "the server, once per group sum"
        against = ("those who see the released model only: the server drew the noise and "
                   "can remove it")
    else:
        raise ValueError(f"noise_draw={noise_draw!r} is not 'client' or 'group'")
    out = {"neighbouring_relation": RELATIONS[sampling], "noise_drawn_by": drawn_by,
           "trusted_server": noise_draw == "group", "protects_against": against,
           "valid": accounting_gap is None}
    if observed_groups:
        out["observed_groups"] = ("privacy groups " + ", ".join(map(str, observed_groups)) +
                                  ": each client's noised update is seen by the server on "
                                  "its own and accounted as one Gaussian release of that "
                                  "client in every round it takes part (zero-out "
                                  "neighbours, no amplification beyond absent rounds)")
    if accounting_gap is not None:
        out["why_not_valid"] = accounting_gap
    return out
