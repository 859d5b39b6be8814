"""What each method does in a round, as numbers: the pure-Python half of every method.

A :class:`MethodPlan` says, per aggregation group, the sampling rate q_m, the expected cohort
r_m = q_m |G_m|, the clip C_m, the noise multiplier sigma_m (noise std on the group sum is
sigma_m C_m unless ``noise_stddevs`` says otherwise), the Top_k keep fraction and the weight
of the group mean. The TFF process and the ledger both read it; nothing here imports TF.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import List, Optional, Sequence

import numpy as np

from ..privacy import accounting, gdpfed, idp

# values of the config keys this module acts on
GROUP_WEIGHTINGS = ("paper", "normalized")          # group_weighting: combination_weights
PFA_ACCOUNTINGS = ("paper", "per-row")              # pfa_accounting: plan_pfa
PFA_PUBLIC_NOISES = ("full", "share")               # pfa_public_noise: plan_pfa


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


def _grouped_plan(method, setting: PrivacySetting, rates, keep_fractions=None,
                  noise_multipliers=None) -> MethodPlan:
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


def plan_p_fedavg(setting: PrivacySetting, **_) -> MethodPlan:
    """P-FedAvg: FedAvg with uniform sampling at rate q, no clipping, no noise."""
    m = len(setting.group_sizes)
    n = float(sum(setting.group_sizes))
    return MethodPlan("p_fedavg", False, [setting.expected_rate] * m, [0.0] * m, [0] * m,
                      [math.inf], [0.0], [setting.expected_rate * n], [1.0], [1.0])


def plan_dp_fedavg(setting: PrivacySetting, noise_multiplier=None, **_) -> MethodPlan:
    """DP-FedAvg (003 Algorithm 2): one rate q for all, sigma calibrated to the strictest
    budget min_m epsilon_m, mean over the cohort r = q n.

    With fixed-size cohorts (drawn per group, round(q |G_m|) of |G_m|) a client's epsilon
    depends on its group's size, so sigma is the largest of the groups' calibrations: every
    group meets the strictest budget under the ledger's own per-group accounting."""
    m = len(setting.group_sizes)
    n = float(sum(setting.group_sizes))
    if noise_multiplier is None:
        sizes = sorted(set(setting.group_sizes)) if setting.sampling == "fixed" else [None]
        noise_multiplier = max(accounting.calibrate_noise_multiplier(
            min(setting.budgets), setting.expected_rate, setting.rounds, setting.delta,
            setting.accountant, setting.tolerance, setting.sampling, size) for size in sizes)
    z = float(noise_multiplier)
    return MethodPlan("dp_fedavg", True, [setting.expected_rate] * m, [z] * m, [0] * m,
                      [setting.clip], [z * setting.clip], [setting.expected_rate * n], [1.0],
                      [1.0])


def plan_gdpfed(setting: PrivacySetting, noise_multipliers=None, **_) -> MethodPlan:
    """GDPFed: every group sampled at q, sigma_m calibrated to epsilon_m (Theorem 1)."""
    return _grouped_plan("gdpfed", setting, [setting.expected_rate] * len(setting.budgets),
                         noise_multipliers=noise_multipliers)


def _optimal_rates(setting, local_lr, local_steps, sparsify):
    return gdpfed.optimal_sampling_rates(setting.budgets, setting.group_sizes,
                                         setting.expected_rate, setting.rounds, setting.delta,
                                         local_lr, local_steps, sparsify)


def plan_gdpfed_opc(setting: PrivacySetting, rates=None, local_lr=0.1, local_steps=5,
                    noise_multipliers=None, **_) -> MethodPlan:
    """GDPFed-opc (GDPFed-op in 003): Problem 1's rates (phi* = 0), no sparsification."""
    rates = rates if rates is not None else _optimal_rates(setting, local_lr, local_steps, False)
    return _grouped_plan("gdpfed_opc", setting, rates, noise_multipliers=noise_multipliers)


def plan_gdpfed_plus(setting: PrivacySetting, rates=None, keep_fractions=(0.7, 0.8, 0.9),
                     local_lr=0.1, local_steps=5, noise_multipliers=None, **_) -> MethodPlan:
    """GDPFed+ (Algorithm 1): Problem 1's rates and per-group Top_k with k_m/d."""
    if len(keep_fractions) != len(setting.budgets):
        raise ValueError(f"keep_fractions={list(keep_fractions)} needs one entry per group")
    rates = rates if rates is not None else _optimal_rates(setting, local_lr, local_steps, True)
    return _grouped_plan("gdpfed_plus", setting, rates, keep_fractions, noise_multipliers)


def _group_ratios(setting):
    sizes = np.asarray(setting.group_sizes, dtype=float)
    return sizes / sizes.sum()


@functools.lru_cache(maxsize=16)
def _sample_calibration_cached(budgets, ratios, rate, rounds, delta, accountant):
    return idp.sample_rates(list(budgets), list(ratios), rate, rounds, delta, accountant)


def _sample_calibration(setting: PrivacySetting) -> idp.SampleCalibration:
    """SAMPLE's shared sigma and per-group rates for a setting, computed once per setting
    (idp_sample and idp_fedavg share it; each calibration takes seconds)."""
    return _sample_calibration_cached(tuple(setting.budgets), tuple(_group_ratios(setting)),
                                      setting.expected_rate, setting.rounds, setting.delta,
                                      setting.accountant)


def plan_idp_sample(setting: PrivacySetting, rates=None, **_) -> MethodPlan:
    """IDP-FedAvg SAMPLE as GDPFed's baseline (003 App. B.2): per-group rates and one shared
    sigma from :func:`tff_idp.privacy.idp.sample_rates`, fixed clip C; every group sum gets
    N(0, sigma^2 C^2) (disjoint groups: the same guarantee as one noise on the total), so the
    group means can be reweighted like GDPFed's.

    With fixed ``rates`` (e.g. the FMNIST rates 003 App. B.2 prints, (0.82, 2.80, 2.38)%) the
    shared sigma is the largest of the groups' own calibrations at those rates, the one
    sigma under which every group stays within its budget (groups whose own sigma is smaller
    spend less than their budget; the ledger shows it)."""
    m = len(setting.budgets)
    if rates is None:
        c = _sample_calibration(setting)
        rates, sigma = c.rates, c.noise_multiplier
    else:
        sigma = max(gdpfed.group_noise_multipliers(
            setting.budgets, rates, setting.rounds, setting.delta, setting.accountant,
            setting.tolerance, setting.sampling, setting.group_sizes))
    return _grouped_plan("idp_sample", setting, rates, noise_multipliers=[sigma] * m)


def plan_idp_scale(setting: PrivacySetting, **_) -> MethodPlan:
    """IDP-FedAvg SCALE (Boenisch et al.; 003 App. B.2): shared rate q, per-group clips
    C_p = C sigma_bar / sigma_p, one noise std sigma_bar C on every group sum."""
    c = idp.scale_clips(setting.budgets, _group_ratios(setting), setting.expected_rate,
                        setting.rounds, setting.delta, setting.clip, setting.accountant,
                        setting.tolerance)
    m = len(setting.budgets)
    cohorts = [setting.expected_rate * s for s in setting.group_sizes]
    return MethodPlan(
        method="idp_scale", private=True, rates=[setting.expected_rate] * m,
        noise_multipliers=c.group_noise_multipliers, aggregation_groups=list(range(m)),
        clips=c.clips, noise_stddevs=[c.noise_multiplier * setting.clip] * m,
        expected_cohorts=cohorts, weights=combination_weights(cohorts, setting),
        keep_fractions=[1.0] * m)


def plan_idp_fedavg(setting: PrivacySetting, **_) -> MethodPlan:
    """IDP-FedAvg in paper 004's own form: SAMPLE rates (Bernoulli per client), one global
    sigma, TFF's adaptive-clipping DP aggregator (initial clip 0.1, target quantile 0.5,
    clip learning rate 0.2, clipped-count stddev 0.05 x expected cohort) normalised by the
    expected cohort. sigma covers value and clipped-count noise together (TFF splits it)."""
    c = _sample_calibration(setting)
    m = len(setting.budgets)
    expected = float(np.dot(c.rates, setting.group_sizes))
    return MethodPlan("idp_fedavg", True, list(c.rates), [c.noise_multiplier] * m, [0] * m,
                      [0.1], [c.noise_multiplier * 0.1], [expected], [1.0], [1.0],
                      adaptive_clip=True)


PFA_SHARE_GAP = (
    "PFA with public_noise='share' (a diagnostic reading): public clients add only their "
    "share of the group sum's noise, yet the server sees their rows one by one, so a row is "
    "barely noised; no epsilon bounds what the server learns about a public client")
PFA_ACCOUNTING_GAP = (
    "PFA's public clients each send an individually noised update that the server sees one "
    "by one; the ledger accounts them as a sampled noised sum, so its epsilon does not bound "
    "what the server learns about a public client (pfa_accounting='per-row' does)")


def plan_pfa(setting: PrivacySetting, noise_multipliers=None, pfa_accounting="paper",
             public_noise="full", **_) -> MethodPlan:
    """PFA in GDPFed's adaptation (003 App. B.2): rate q for all, sigma_m per budget as in
    GDPFed; the highest-budget group is public (its clients' individually noised updates
    define a rank-1 principal subspace), the lowest group's mean is projected onto it, the
    middle group is kept as it is, and the reweighting of GDPFed combines them.

    ``pfa_accounting="paper"``: the public group's sigma is calibrated like a GDPFed group's
    (amplified, noised sum), as the adaptation does; the plan records that this does not
    cover the rows the server sees (:data:`PFA_ACCOUNTING_GAP`). ``"per-row"``: each public
    row is a Gaussian release of one client whose participation the server observes
    (:func:`tff_idp.privacy.accounting.observed_epsilon`), and the public sigma is calibrated
    to the public budget under that accounting; the ledger accounts it the same way.
    ``public_noise="share"``: public clients add only their share of the group noise (a
    diagnostic reading of how the paper's PFA numbers might have been made; not private
    against the server, :data:`PFA_SHARE_GAP`)."""
    if pfa_accounting not in PFA_ACCOUNTINGS:
        raise ValueError(f"pfa_accounting={pfa_accounting!r} is not one of {PFA_ACCOUNTINGS}")
    if public_noise == "share" and pfa_accounting != "paper":
        raise ValueError("public_noise='share' is a diagnostic of the paper's adaptation; "
                         "pfa_accounting must be 'paper'")
    m = len(setting.budgets)
    if m < 2:
        raise ValueError("PFA needs at least two privacy groups")
    public = m - 1
    if pfa_accounting == "per-row" and noise_multipliers is None:
        noise_multipliers = gdpfed.group_noise_multipliers(
            setting.budgets[:public], [setting.expected_rate] * public, setting.rounds,
            setting.delta, setting.accountant, setting.tolerance, setting.sampling,
            setting.group_sizes[:public]) + [accounting.calibrate_observed_noise_multiplier(
                setting.budgets[public], setting.expected_rate, setting.rounds, setting.delta)]
    plan = _grouped_plan("pfa", setting, [setting.expected_rate] * m,
                         noise_multipliers=noise_multipliers)
    if pfa_accounting == "per-row":
        return dataclasses.replace(plan, public_group=public, projected_group=0,
                                   observed_groups=[public])
    return dataclasses.replace(plan, public_group=public, projected_group=0,
                               public_noise=public_noise,
                               accounting_gap=PFA_SHARE_GAP if public_noise == "share"
                               else PFA_ACCOUNTING_GAP)


PLANNERS = {
    "p_fedavg": plan_p_fedavg,
    "dp_fedavg": plan_dp_fedavg,
    "gdpfed": plan_gdpfed,
    "gdpfed_opc": plan_gdpfed_opc,
    "gdpfed_plus": plan_gdpfed_plus,
    "idp_sample": plan_idp_sample,
    "idp_scale": plan_idp_scale,
    "idp_fedavg": plan_idp_fedavg,
    "pfa": plan_pfa,
}
