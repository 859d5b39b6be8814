"""A group-DP method's numbers from the privacy budgets, for the library.

``plan_from_budgets("gdpfed_plus", budgets=[0.5, 1.5, 3.0], group_sizes=[200, 200, 200],
rounds=50, expected_rate=0.1, clip=1.0)`` returns a :class:`GroupDPPlan`: per privacy group
the sampling rate q_m, the noise multiplier sigma_m calibrated so that T rounds spend at most
epsilon_m (GDPFed, papers 000/003, Alg. 1 and Sec. IV; IDP-FedAvg's SAMPLE / SCALE, paper
004), the clip, Top_k keep fractions and group weights. It is the suite's own planner
(``tff_idp.algorithms.plan``) on a :class:`~tff_idp.experiment_config.ExperimentConfig` holding the
keys these methods read, and the plan is refused, as a run's is, when the privacy ledger
finds a group over its budget: the numbers a ``python -m tff_idp.run`` of the same settings
uses. No TensorFlow is imported here.

The guarantee the plan is calibrated for: add/remove one client (replace-one with
``sampling="fixed"``), each client of group m sampled independently with probability q_m
every round (the caller samples the cohort: ``sample_cohort``), against those who see the
released models (amplification by sampling needs the cohort to be secret from them).
Against the server, with client-drawn noise and a secure sum, each round a client took part
in is one Gaussian release with its group's sigma_m, no amplification.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..algorithms.plan import MethodPlan, PrivacySetting
from ..config import ConfigError
from ..experiment_config import ExperimentConfig, from_mapping, validate
from ..errors import shown
from ..methods import METHODS
from ..planning import checked_plan, new_ledger, privacy_setting

# methods whose round is FedAvg's client work and one aggregation factory on the model change
# (each says so: ``Method.fedavg_round``; the others have their own client programs: split
# models, personal parts, fine-tuned read-outs)
FEDAVG_FAMILY = tuple(name for name, m in METHODS.items() if m.fedavg_round)
# the config keys a plan may take besides the budgets (what these methods' planners and
# factories read): the core keys they share, then the keys each of them owns
# (``Method.config_keys``, e.g. IDP-FedAvg's adaptive_clipping, PFA's pfa_*)
SETTINGS = ("accountant", "calibration_tolerance", "sampling", "group_weighting", "rates",
            "noise_multipliers", "keep_fractions", "local_lr", "local_steps", "noise_draw") + \
    tuple(dict.fromkeys(key.name for name in FEDAVG_FAMILY
                        for key in METHODS[name].config_keys))


@dataclasses.dataclass(frozen=True)
class GroupDPPlan:
    """A method's per-group numbers (``plan``: rates, noise multipliers, clips, keep
    fractions, weights; ``tff_idp.algorithms.plan.MethodPlan``), the setting it was
    calibrated for, and the config keys its aggregation factory reads."""
    method: str
    plan: MethodPlan
    setting: PrivacySetting
    config: ExperimentConfig

    @property
    def num_groups(self) -> int:
        """Privacy groups: a client's ``group`` is an index in [0, num_groups)."""
        return len(self.setting.budgets)

    @property
    def rates(self) -> List[float]:
        return list(self.plan.rates)

    @property
    def noise_multipliers(self) -> List[float]:
        return list(self.plan.noise_multipliers)

    def aggregation_factory(self, noise_seed: Optional[int] = None,
                            record_aggregation_factory=None):
        """The method's aggregation factory (the one the suite's rounds use, built by its
        plug-in in ``tff_idp.methods``), on tagged ``(update, group, seed)`` values.
        ``noise_seed``: None draws the server's noise from a secret seed; an int32 fixes it
        (simulation only: ``tff_idp.learning.dp_aggregator``)."""
        from ..methods.base import FactoryOptions
        return METHODS[self.method].aggregation_factory(
            self.plan, self.config, noise_seed,
            FactoryOptions(record_aggregation_factory=record_aggregation_factory))

    def epsilons(self) -> Dict[int, float]:
        """Per privacy group, the epsilon the whole plan spends at the setting's delta
        against those who see the released models (the ledger's planned account)."""
        return {g: float(e) for g, e in self._ledger().group_epsilons(
            [self.plan.round_mechanisms()] * self.setting.rounds).items()}

    def _ledger(self):
        return new_ledger(self.config, _client_groups(self.setting.group_sizes), self.setting,
                          self.plan)


def plan_from_budgets(method: str, budgets: Sequence[float], group_sizes: Sequence[int],
                      rounds: int, expected_rate: float, clip: float = 1.0,
                      delta: Optional[float] = None, **settings) -> GroupDPPlan:
    """The plan of ``method`` (one of :data:`FEDAVG_FAMILY`) for privacy groups of
    ``group_sizes`` clients with budgets ``budgets`` (strictest first), ``rounds`` rounds,
    expected sampling rate ``expected_rate`` (q: sum_m r_m = q n) and clip C; ``delta``
    defaults to 1 / n^1.1 (n the number of clients), as a run's. ``settings``: any of
    :data:`SETTINGS` (config keys, docs/config.md). Bad values are one-line errors naming
    the argument (``tff_idp.config.ConfigError``); a plan that overspends a budget is
    refused."""
    if method not in FEDAVG_FAMILY:
        raise ConfigError(f"method={method!r}: the library's process runs FedAvg's family: "
                          f"{', '.join(FEDAVG_FAMILY)}")
    for key in settings:
        if key not in SETTINGS:
            raise ConfigError(f"{key}={settings[key]!r}: not a plan setting (choose from "
                              f"{', '.join(SETTINGS)})")
    if not isinstance(budgets, (list, tuple, np.ndarray)) or not all(
            isinstance(e, (int, float, np.number)) and not isinstance(e, bool)
            for e in budgets):
        raise ConfigError(f"budgets={shown(budgets)}: must be a list of epsilons, one per "
                          "group (strictest first)")
    if not isinstance(group_sizes, (list, tuple, np.ndarray)):
        raise ConfigError(f"group_sizes={shown(group_sizes)}: must be a list of client "
                          "counts, one per group")
    sizes = list(group_sizes)
    if any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1
           for s in sizes):
        raise ConfigError(f"group_sizes={shown(sizes)}: must be positive integers")
    if len(sizes) != len(budgets):
        raise ConfigError(f"group_sizes={sizes!r}: needs one entry per budget "
                          f"({len(budgets)})")
    n = int(sum(sizes))
    cfg = validate(from_mapping({
        "methods": [method], "budgets": list(budgets), "num_clients": n,
        "group_ratios": [s / n for s in sizes], "rounds": rounds,
        "expected_rate": expected_rate, "clip": clip, "delta": delta, **settings}))
    setting = privacy_setting(cfg, sizes)
    plan = checked_plan(cfg, method, setting, _client_groups(sizes), key="method")
    return GroupDPPlan(method, plan, setting, cfg)


def _client_groups(sizes) -> np.ndarray:
    """Each client's privacy group: |G_0| zeros, then |G_1| ones, ..."""
    return np.repeat(np.arange(len(sizes)), sizes)


def sample_cohort(rng: np.random.Generator, client_groups: Sequence[int],
                  plan: GroupDPPlan) -> np.ndarray:
    """Indices of this round's cohort: every client of group m independently with
    probability q_m (``sampling="poisson"``), or round(q_m |G_m|) of them without
    replacement (``"fixed"``), as the plan's accounting assumes (``tff_idp.sampling``).
    ``client_groups[i]``: client i's privacy group."""
    from ..sampling import sample_cohort as sample
    groups = np.asarray(client_groups)
    members = [np.flatnonzero(groups == g) for g in range(plan.num_groups)]
    if any(len(m) != s for m, s in zip(members, plan.setting.group_sizes)):
        raise ValueError(f"client_groups: group sizes {[len(m) for m in members]} differ from "
                         f"the plan's {list(plan.setting.group_sizes)}")
    picked = sample(rng, members, plan.rates, plan.config.sampling)
    return np.sort(np.concatenate(picked)) if picked else np.zeros(0, int)


__all__ = ["FEDAVG_FAMILY", "SETTINGS", "GroupDPPlan", "plan_from_budgets", "sample_cohort"]
