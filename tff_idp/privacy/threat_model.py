"""What a run's reported epsilons are guarantees *of*: the neighbouring relation, who draws the
noise, and, for each of two observers, what holds against it.

Every run summary carries this next to the ledger's numbers (``privacy.guarantee``), so a
reader never has to infer the trust model from the config:

- **Those who see the released models** (``observers.model_viewers``): the ledger's
  ``realised_epsilon`` per group. The cohort is secret from them, so it rests on
  amplification by sampling. ``sampling="poisson"``: add/remove-one client (sensitivity C of
  a clipped sum); ``sampling="fixed"``: replace-one client (sensitivity 2C; the accounting
  halves the noise multiplier, :func:`tff_idp.privacy.accounting.round_event`).
- **The server** (``observers.server``): it draws the cohort, so no amplification holds
  against it. With ``noise_draw="client"`` (GDPFed Alg. 1 line 13) each client adds its share
  of its group's noise before anything leaves it and, under secure aggregation, the server
  sees the noised group sums and the other quantities of :data:`RELEASED` (no client's
  un-noised loss, norm or clipping: :data:`CLIENT_DIAGNOSTICS`): each round a client took
  part in is a Gaussian release of its clipped update (zero-out neighbour, sensitivity C,
  its group's sigma), composed over those rounds: the ledger's ``server_epsilon`` per group
  (the largest of its clients'). With
  ``noise_draw="group"`` the server draws the noise and can subtract it: no guarantee against
  it (``trusted_server: true``).
- A plan with an ``accounting_gap`` (PFA with ``pfa_accounting="paper"``: the public clients'
  individually noised rows) has ``valid: false`` and the reason.

The budgets are checked against the model viewers' epsilon; the server's usually exceeds them
(one participation of a default-run DP-FedAvg client already costs 0.78 by RDP), which the
summary's ``budget_met_against`` says in words.
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence

# What the clients' un-noised statistics are: each round's mean train loss, the mean pre-clip
# update norm and the clipped fraction. None of them is noised, so none may leave the
# clients in a private run: the protocol (both backends' round and the TFF computation)
# releases only the noised group sums, the cohort counts (the server drew the cohort), the
# noise std and kept fraction (its own parameters and post-processing), PFA's noised public
# rows and, with adaptive clipping, the noised clipped-count sum and the clip it sets. The
# simulator can still measure the three when asked (``simulation_diagnostics = true``):
# metrics.csv then holds them as ``sim_<name>`` columns, never sent by the protocol. In a
# run that is not private (P-FedAvg, FedRep) the server sees raw updates anyway and they are
# released under their plain names.
CLIENT_DIAGNOSTICS = ("train_loss", "clipped_fraction", "mean_update_norm")
RELEASED = ("the noised group sums (what secure aggregation reveals)",
            "the cohort per group (the server drew it)",
            "the noise std per group and the kept fraction per group (server parameters and "
            "post-processing of the noised sums)",
            "with adaptive clipping: the noised clipped-count sum and the clip it sets",
            "PFA: each public client's noised row (accounted per client, observed_groups)")


def diagnostics_release(private: bool, simulation_diagnostics: bool) -> Optional[str]:
    """How a run's clients' un-noised statistics (:data:`CLIENT_DIAGNOSTICS`) are reported:
    ``"released"`` (not private: plain columns), ``"simulation"`` (private, measured by the
    simulator only: ``sim_`` columns) or None (private: not measured, not sent)."""
    if not private:
        return "released"
    return "simulation" if simulation_diagnostics else None


def diagnostic_columns(release: Optional[str]) -> Dict[str, str]:
    """{statistic: metrics.csv column} for a :func:`diagnostics_release` mode."""
    if release is None:
        return {}
    prefix = "sim_" if release == "simulation" else ""
    return {k: prefix + k for k in CLIENT_DIAGNOSTICS}


RELATIONS = {"poisson": "add/remove one client (the clipped sum moves by at most C)",
             "fixed": "replace one client (the clipped sum moves by up to 2C)"}
SERVER_RELATION = ("zero-out one client's clipped update in each round it took part in "
                   "(sensitivity C); the server knows the cohort, so no amplification")
NOISE_DRAWS = ("client", "group")


def guarantee(sampling: str, noise_draw: str, accounting_gap: Optional[str] = None,
              observed_groups: Sequence[int] = (), within_budget: Optional[bool] = None,
              within_budget_server: Optional[bool] = None) -> dict:
    """The ``privacy.guarantee`` block of a run summary (see the module docstring).
    ``noise_draw``: who drew the noise that reached the server's sums, ``"client"`` or
    ``"group"`` (the server); ``within_budget`` / ``within_budget_server``: the ledger's
    checks of each observer's epsilon against every client's budget."""
    if sampling not in RELATIONS:
        raise ValueError(f"sampling={sampling!r} is not one of {sorted(RELATIONS)}")
    if noise_draw not in NOISE_DRAWS:
        raise ValueError(f"noise_draw={noise_draw!r} is not one of {NOISE_DRAWS}")
    viewers = {"epsilon": "groups.<g>.realised_epsilon",
               "neighbouring_relation": RELATIONS[sampling],
               "accounting": "amplified by the sampling of clients, which is secret from them"}
    if noise_draw == "client":
        drawn_by = "each client, its share of its group's noise (GDPFed Alg. 1 line 13)"
        server = {"epsilon": "groups.<g>.server_epsilon (the largest of the group's clients')",
                  "neighbouring_relation": SERVER_RELATION,
                  "accounting": "the Gaussian releases of the rounds the client took part in, "
                                "composed without amplification, under secure aggregation"}
        against = ("those who see the released models (realised_epsilon) and, with the "
                   "larger server_epsilon, an honest-but-curious server that sees only the "
                   "securely aggregated noised group sums")
    else:
        drawn_by = "the server, once per group sum"
        server = {"epsilon": None, "why": "the server drew the noise and can remove it: no "
                  "guarantee against the server"}
        against = "those who see the released models only (a trusted server)"
    out = {"neighbouring_relation": RELATIONS[sampling], "noise_drawn_by": drawn_by,
           "trusted_server": noise_draw == "group", "protects_against": against,
           "released": list(RELEASED),
           "not_released": "the clients' un-noised " + ", ".join(CLIENT_DIAGNOSTICS) +
                           " (simulation_diagnostics: sim_ columns, simulator only)",
           "observers": {"model_viewers": viewers, "server": server},
           "valid": accounting_gap is None}
    if within_budget is not None:
        out["budget_met_against"] = budget_met_against(
            within_budget, within_budget_server if noise_draw == "client" else None)
    if observed_groups:
        out["observed_groups"] = ("privacy groups " + ", ".join(map(str, observed_groups)) +
                                  ": each client's noised update is seen by the server on "
                                  "its own and accounted as one Gaussian release of that "
                                  "client in every round it takes part (zero-out "
                                  "neighbours, no amplification beyond absent rounds)")
    if accounting_gap is not None:
        out["why_not_valid"] = accounting_gap
    return out


def budget_met_against(viewers: bool, server: Optional[bool]) -> str:
    """In words, which observer every client's budget is met against."""
    if viewers and server:
        return "both: those who see the released models and the server"
    if viewers:
        return ("those who see the released models only" +
                ("" if server is None else "; against the server the budget is exceeded "
                 "(groups.<g>.server_epsilon)"))
    if server:
        return "the server only; exceeded against those who see the released models"
    return "neither observer"


# Who may see what a run folder stores (issue 75, item 5). A run folder is the simulator's
# record, not one observer's view: each file and each column says whose view it belongs to,
# in the folder's observers.json. Model viewers' epsilon assumes the cohort is secret, so
# the realised cohort sizes are not in metrics.csv (the released curve) but in server.csv.
MODEL_VIEWERS = "model viewers (an evaluation of the released model on public test data)"
SERVER = "server only (it drew the cohort; the model viewers' epsilon assumes it secret)"
SIMULATION = "simulation only (no deployment observer has it; outside every epsilon)"
PERSONAL = ("whoever sees the personalised models (their private parts are not covered by "
            "any epsilon)")
NOT_PRIVATE_SERVER = "server (the run is not private: the server sees raw updates)"
SERVER_COLUMNS = ("cohort", "cohort_per_group")           # metrics rows -> server.csv
SERVER_CSV, OBSERVERS_JSON = "server.csv", "observers.json"   # a run folder's files
MANIFEST = "files.sha256"          # the digests of the others (results.manifest)


def column_observer(column: str) -> str:
    """Who may see a column of a run's per-round rows (metrics.csv, server.csv)."""
    if column == "round":
        return "public (the round's index)"
    if column in SERVER_COLUMNS:
        return SERVER
    if column in ("seconds", "eval_seconds") or column.startswith("sim_"):
        return SIMULATION + ("; this machine's timing" if "seconds" in column else "")
    if column in CLIENT_DIAGNOSTICS:        # written under plain names only when not private
        return NOT_PRIVATE_SERVER
    if column == "adaptive_clip":
        return "model viewers (set from the noised clipped count: post-processing)"
    if column.startswith("validation_"):
        return (SIMULATION + "; the released model evaluated on the clients' own validation "
                "examples, which a deployment would not release")
    if column.startswith("averaged_model_"):
        return (SIMULATION + "; the averaged model's private part averages the clients' "
                "un-noised private halves: not private")
    if column.startswith("personal_"):
        return PERSONAL
    if column.startswith(("test_", "client_test_")):
        return MODEL_VIEWERS
    raise KeyError(f"column={column!r}: no observer is declared for it "
                   "(tff_idp.privacy.threat_model.column_observer)")


def run_folder_observers(metrics_columns: Sequence[str], server_columns: Sequence[str],
                         audited: bool) -> dict:
    """observers.json of a run folder: for every file the run writes, who may see it, column
    by column for the per-round tables."""
    out = {"metrics.csv": {c: column_observer(c) for c in metrics_columns},
           SERVER_CSV: {c: column_observer(c) for c in server_columns},
           "ledger.csv": SERVER + "; who took part in which round, per client",
           "config.json": "public (the settings; its seed makes the simulator's noise "
                          "reproducible, so the folder is no deployment: docs/privacy.md)",
           "summary.json": {"plan, privacy": "public (calibration from the config and the "
                                             "ledger's epsilons)",
                            "final_test_accuracy, rounds, seconds, machine": MODEL_VIEWERS +
                            "; timings and machine: simulation only",
                            "personal": PERSONAL, "audit": SIMULATION + "; the auditor's"}}
    out[OBSERVERS_JSON] = "public (this list)"
    out[MANIFEST] = "public (the SHA-256 of each file above: results.manifest)"
    if audited:
        out["canaries.csv"] = out["canaries.png"] = SIMULATION + "; the auditor's canary scores"
    return out
