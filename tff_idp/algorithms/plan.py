"""What a method does in a round, as numbers: the plan every method's planner returns.

A :class:`MethodPlan` says, per aggregation group, the sampling rate q_m, the expected cohort
r_m = q_m |G_m|, the clip C_m, the noise multiplier sigma_m (noise std on the group sum is
sigma_m C_m unless ``noise_stddevs`` says otherwise), the Top_k keep fraction and the weight
of the group mean. The TFF process and the ledger both read it; nothing here imports TF.
Each method's planner lives with the method (``tff_idp.methods``: ``Method.planner``); what
several share is here: the group weights and :func:`grouped_plan`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import List, Optional, Sequence

import numpy as np

from ..privacy import gdpfed

# values of the config keys this module acts on
GROUP_WEIGHTINGS = ("paper", "normalized")          # group_weighting: combination_weights


@dataclasses.dataclass(frozen=True)
class PrivacySetting:
    """Clients' privacy groups, as the methods see them."""
    budgets: Sequence[float]          # epsilon_m per privacy group, ascending
    group_sizes: Sequence[int]        # |G_m|
    delta: float
    rounds: int
    expected_rate: float              # q: sum_m r_m = q n
    clip: float                       # C
    accountant: str = "rdp"
    tolerance: Optional[float] = None
    sampling: str = "poisson"         # "poisson" or "fixed" (without replacement)
    group_weighting: str = "paper"    # "paper": omega_m on group sums; "normalized": on means


@dataclasses.dataclass(frozen=True)
class MethodPlan:
    method: str
    private: bool
    rates: List[float]                # per privacy group: sampling rate q_m
    noise_multipliers: List[float]    # per privacy group: sigma_m (0 if not private)
    aggregation_groups: List[int]     # privacy group -> aggregation group (DP-FedAvg: all 0)
    clips: List[float]                # per aggregation group
    noise_stddevs: List[float]        # per aggregation group: std of noise on the group sum
    expected_cohorts: List[float]     # per aggregation group: r_m
    weights: List[float]              # per aggregation group: weight of the group mean
    keep_fractions: List[float]       # per aggregation group: k_m / d
    adaptive_clip: bool = False       # paper 004: TFF's adaptive clipping (Andrew et al.)
    public_group: Optional[int] = None      # PFA: subspace from this group's clients ...
    projected_group: Optional[int] = None   # ... and this group's mean projected onto it
    # privacy groups whose clients' noised updates the server sees one by one, accounted as
    # observed per-client Gaussian releases (PFA's public rows under pfa_accounting='per-row')
    observed_groups: List[int] = dataclasses.field(default_factory=list)
    # why the ledger's epsilon does not bound what the server sees (None: it does)
    accounting_gap: Optional[str] = None
    public_noise: str = "full"        # PFA: each public row's noise, "full" or "share"

    @property
    def num_aggregation_groups(self) -> int:
        return len(self.clips)

    def round_mechanisms(self):
        """Per privacy group, (q_m, sigma_m) of one round, for the ledger."""
        return [(q, s) for q, s in zip(self.rates, self.noise_multipliers)]

    def server_multipliers(self, cohort_sizes: Sequence[int]) -> List[float]:
        """Per privacy group, the noise multiplier of what the server sees of one cohort
        client in a round with ``cohort_sizes`` clients per privacy group (the ledger's
        server-side account, ``tff_idp.privacy.ledger``): its group's sigma_m on the
        securely aggregated sum; PFA's public rows under ``public_noise="share"``, seen one
        by one, carry only the share sigma_m / sqrt(k_m) of the realised count k_m."""
        out = list(self.noise_multipliers)
        if self.public_group is not None and self.public_noise == "share":
            g = self.public_group
            out[g] = out[g] / math.sqrt(max(int(cohort_sizes[g]), 1))
        return out

    @property
    def noise_multipliers_sq(self) -> List[float]:
        """sigma_m^2 per privacy group, the quantity the papers' tables report."""
        return [s * s for s in self.noise_multipliers]

    def describe(self) -> dict:
        return dataclasses.asdict(self) | {"noise_multipliers_sq": self.noise_multipliers_sq}


def combination_weights(cohorts, setting: PrivacySetting):
    """Weight w_m of group m's mean (the aggregator computes sum_m w_m * sum_m / r_m).

    ``"paper"``: theta += sum_m omega_m y~_m with omega_m = (1/qn) r_m^2 / sum r^2 on group
    *sums* (000/003 Alg. 1 line 19 with App. B.2's omega_m), i.e. w_m = omega_m r_m. The
    weights then sum to sum_m r_m^3 / (qn sum r^2) <= 1: with equal groups the step is the
    cohort mean divided by M, which also divides the injected noise's std by M.
    ``"normalized"``: w_m = r_m^2 / sum r^2, a weighted average of group means (the form of
    the convergence proof, 003 App. D); the step is a full mean.
    """
    if setting.group_weighting == "normalized":
        return [float(w) for w in gdpfed.group_mean_weights(cohorts)]
    if setting.group_weighting == "paper":
        qn = setting.expected_rate * float(sum(setting.group_sizes))
        return [float(w * r) for w, r in zip(gdpfed.group_weights(cohorts, qn), cohorts)]
    raise ValueError(f"group_weighting={setting.group_weighting!r} is not one of "
                     f"{GROUP_WEIGHTINGS}")


def grouped_plan(method, setting: PrivacySetting, rates, keep_fractions=None,
                 noise_multipliers=None) -> MethodPlan:
    """A plan with a sampling rate, a sigma and the common clip per privacy group (GDPFed and
    the baselines planned like it): sigma_m calibrated to epsilon_m at rate q_m (Theorem 1)
    unless given, group means weighted by :func:`combination_weights`."""
    sizes = np.asarray(setting.group_sizes, dtype=float)
    rates = [float(q) for q in rates]
    if noise_multipliers is None:
        noise_multipliers = gdpfed.group_noise_multipliers(
            setting.budgets, rates, setting.rounds, setting.delta, setting.accountant,
            setting.tolerance, setting.sampling, setting.group_sizes)
    cohorts = [q * s for q, s in zip(rates, sizes)]
    m = len(rates)
    return MethodPlan(
        method=method, private=True, rates=rates,
        noise_multipliers=[float(z) for z in noise_multipliers],
        aggregation_groups=list(range(m)), clips=[setting.clip] * m,
        noise_stddevs=[float(z) * setting.clip for z in noise_multipliers],
        expected_cohorts=cohorts,
        weights=combination_weights(cohorts, setting),
        keep_fractions=list(keep_fractions) if keep_fractions is not None else [1.0] * m)
