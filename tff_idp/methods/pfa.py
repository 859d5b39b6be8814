"""PFA (Liu et al. 2021) in GDPFed's adaptation (003 App. B.2): the highest-budget group's
individually noised updates span a principal subspace, the lowest group's mean is projected
onto it around the public mean, per layer or globally (``pfa_projection``;
``tff_idp.aggregators.PFAFactory``); planned like GDPFed, accounted per ``pfa_accounting``
(:func:`plan_pfa`)."""
from __future__ import annotations

import dataclasses

from ..algorithms.plan import MethodPlan, PrivacySetting, grouped_plan
from ..config_keys import ConfigKey
from ..privacy import accounting, gdpfed
from .base import FactoryOptions, Method

# pfa_projection: each model tensor its own subspace, or one of the whole update
# (tff_idp.aggregators.PFAProjection)
PFA_PROJECTIONS = ("per-layer", "global")
PFA_ACCOUNTINGS = ("paper", "per-row")              # pfa_accounting: plan_pfa
PFA_PUBLIC_NOISES = ("full", "share")               # pfa_public_noise: plan_pfa
CONFIG_KEYS = (
    ConfigKey("pfa_accounting", "str", "paper", "PFA's public clients: \"paper\" (the GDPFed "
              "adaptation: accounted as an amplified noised sum, which their one-by-one rows "
              "are not: the run is marked privacy.valid = false) or \"per-row\" (each row a "
              "Gaussian release of one client the server sees; noise calibrated to the public "
              "group's budget)", choices=PFA_ACCOUNTINGS),
    ConfigKey("pfa_public_noise", "str", "full", "PFA's public clients add their group's "
              "\"full\" noise (their rows are seen one by one) or only their \"share\" of "
              "the group sum's (a diagnostic reading, not private: docs/privacy.md)",
              choices=PFA_PUBLIC_NOISES),
    ConfigKey("pfa_projection", "str", "per-layer", "PFA's projection of the private mean "
              "around the public mean: \"per-layer\" (each model tensor its own rank-1 "
              "subspace, as the original code does) or \"global\" (one subspace of the whole "
              "update)", choices=PFA_PROJECTIONS),
)

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
    plan = grouped_plan("pfa", setting, [setting.expected_rate] * m,
                        noise_multipliers=noise_multipliers)
    if pfa_accounting == "per-row":
        return dataclasses.replace(plan, public_group=public, projected_group=0,
                                   observed_groups=[public])
    return dataclasses.replace(plan, public_group=public, projected_group=0,
                               public_noise=public_noise,
                               accounting_gap=PFA_SHARE_GAP if public_noise == "share"
                               else PFA_ACCOUNTING_GAP)


class PFA(Method):
    name = "pfa"
    config_keys = CONFIG_KEYS
    fedavg_round = True
    summary = "PFA (Liu et al. 2021): private mean projected on the public clients' subspace"
    planner = staticmethod(plan_pfa)

    def config_errors(self, cfg):
        yield from super().config_errors(cfg)
        if cfg.noise_draw == "group":
            yield ("noise_draw", cfg.noise_draw, "pfa's public clients are noised one by one; "
                   "use 'client'")
        if cfg.pfa_public_noise == "share" and cfg.pfa_accounting != "paper":
            yield ("pfa_public_noise", cfg.pfa_public_noise, "'share' goes with "
                   "pfa_accounting='paper' only")
        if cfg.pfa_accounting == "per-row" and cfg.accountant != "rdp":
            yield "accountant", cfg.accountant, "pfa_accounting='per-row' needs accountant='rdp'"
        if cfg.pfa_accounting == "per-row" and cfg.sampling != "poisson":
            yield ("sampling", cfg.sampling, "pfa_accounting='per-row' needs "
                   "sampling='poisson'")

    def plan_kwargs(self, cfg):
        return {**super().plan_kwargs(cfg), "pfa_accounting": cfg.pfa_accounting,
                "public_noise": cfg.pfa_public_noise}

    def aggregation_query(self, plan, cfg, noise_seed, options=FactoryOptions()):
        """PFA's query (``queries.pfa``): the private groups' mean projected onto the public
        clients' principal directions."""
        from ..queries.pfa import PFAProjection, PFAQuery
        return PFAQuery(plan.clips, plan.noise_stddevs, plan.expected_cohorts, plan.weights,
                        PFAProjection(plan.public_group, plan.projected_group,
                                      public_noise=plan.public_noise,
                                      projection=cfg.pfa_projection),
                        noise_seed=noise_seed).on_shared(options.shared_masks)

    def plan_version(self, cfg):
        """2: the private mean projected around the public mean, per layer by default (the
        original's ``__projection``); before, onto the centred directions alone."""
        return 2
