"""FedRep (Collins et al., ICML 2021) and its DP form (CENTAUR's DP-FedRep, the paper-001
baseline family): a shared representation (the body) and a personal head per client.

Each round a sampled client starts from the broadcast body and its own stored head, trains
the head alone for ``personal_steps`` steps (or ``personal_epochs`` passes) with the body
frozen, then the body alone for ``local_steps`` steps (or ``local_epochs`` passes) with the
head frozen, keeps the head and sends the body's change; the server averages the body changes
as FedAvg does. ``dp_fedrep`` clips each body change and adds Gaussian noise on the body only
(client-level DP of the shared part; heads are never released), planned as DP-FedAvg (one
sigma for the strictest budget, every client sampled at q). The split is the config's
``personal`` (default ``"head"``: the last Dense layer)."""
from __future__ import annotations

from ..config_keys import ConfigKey
from ..key_ranges import AT_LEAST_ONE
from .base import Method, Phase
from .gdpfed import DPFedAvg, plan_dp_fedavg, plan_p_fedavg

# the personal phase's keys (FedRep's, and paper 001's methods built on it)
CONFIG_KEYS = (
    ConfigKey("personal_steps", "int", 5, "fedrep: steps on the personal part first ...",
              range=AT_LEAST_ONE, limit=1_000_000),
    ConfigKey("personal_epochs", "Optional[int]", None,
              "... or passes over the client's data", range=AT_LEAST_ONE, limit=10_000),
)


class FedRep(Method):
    name = "fedrep"
    config_keys = CONFIG_KEYS
    fedavg_round = False
    summary = "FedRep (Collins et al. 2021): shared body, a personal head per client; no privacy"
    planner = staticmethod(plan_p_fedavg)
    default_split = "head"
    needs_personal = True

    def plan_kwargs(self, cfg):
        return {}

    def plan_version(self, cfg):
        return 0

    def phases(self, cfg):
        """FedRep Alg. 1: head updates with the body fixed, then body updates with the head
        fixed."""
        return [Phase("personal", cfg.personal_steps, cfg.personal_epochs),
                Phase("shared", cfg.local_steps, cfg.local_epochs)]


class DPFedRep(FedRep, DPFedAvg):
    name = "dp_fedrep"
    summary = "FedRep with the shared body's updates clipped and noised (client-level DP)"
    planner = staticmethod(plan_dp_fedavg)

    plan_kwargs = DPFedAvg.plan_kwargs
    plan_version = DPFedAvg.plan_version
    plan_summary = DPFedAvg.plan_summary
