"""PFA (Liu et al. 2021) in GDPFed's adaptation (003 App. B.2): the highest-budget group's
individually noised updates span a principal subspace, the lowest group's mean is projected
onto it around the public mean, per layer or globally (``pfa_projection``;
``tff_idp.aggregators.PFAFactory``); planned like GDPFed, accounted per ``pfa_accounting``
(``tff_idp.algorithms.plan.plan_pfa``)."""
from __future__ import annotations

from ..algorithms import plan as plans
from .base import Method

# pfa_projection: each model tensor its own subspace, or one of the whole update
# (tff_idp.aggregators.PFAProjection)
PFA_PROJECTIONS = ("per-layer", "global")


class PFA(Method):
    name = "pfa"
    summary = "PFA (Liu et al. 2021): private mean projected on the public clients' subspace"
    planner = staticmethod(plans.plan_pfa)

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

    def aggregation_factory(self, plan, cfg, noise_seed):
        from ..aggregators import PFAFactory, PFAProjection
        return PFAFactory(plan.clips, plan.noise_stddevs, plan.expected_cohorts, plan.weights,
                          PFAProjection(plan.public_group, plan.projected_group,
                                        public_noise=plan.public_noise,
                                        projection=cfg.pfa_projection),
                          noise_seed=noise_seed)

    def plan_version(self, cfg):
        """2: the private mean projected around the public mean, per layer by default (the
        original's ``__projection``); before, onto the centred directions alone."""
        return 2
