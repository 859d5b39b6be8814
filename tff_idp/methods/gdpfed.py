"""GDPFed's family (papers 000/003): FedAvg without privacy (P-FedAvg), DP-FedAvg (one sigma
for the strictest budget, 003 Algorithm 2), GDPFed (a sigma per privacy group, Theorem 1),
GDPFed-opc (Problem 1's per-group rates) and GDPFed+ (those rates and per-group Top_k,
Algorithm 1). One round for all of them: broadcast, local SGD on the whole model, clip,
noise, group sums, (top-k,) reweighted group means added to the model. They differ only in
their plans (``tff_idp.algorithms.plan``)."""
from __future__ import annotations

import inspect

import numpy as np

from ..algorithms import plan as plans
from ..privacy import gdpfed
from .base import Method


def noise_magnitude_at_rates(plan, setting) -> dict:
    """Lambda (003 Problem 1) at the plan's per-group rates and keep fractions."""
    cohorts = np.asarray(plan.rates) * np.asarray(setting.group_sizes, dtype=float)
    return {"noise_magnitude": gdpfed.noise_magnitude(
        plan.noise_multipliers_sq, setting.clip, cohorts, plan.keep_fractions)}


class PFedAvg(Method):
    name = "p_fedavg"
    summary = "FedAvg without privacy (paper 000's P-FedAvg): the accuracy ceiling"
    planner = staticmethod(plans.plan_p_fedavg)

    def plan_kwargs(self, cfg):
        return {}

    def plan_version(self, cfg):
        return 0                   # nothing to account: unaffected by the fixed-size fix


class DPFedAvg(Method):
    name = "dp_fedavg"
    summary = "DP-FedAvg: one noise multiplier for all, set by the strictest budget (000/003)"
    planner = staticmethod(plans.plan_dp_fedavg)

    def plan_kwargs(self, cfg):
        if cfg.noise_multipliers is None:
            return {}
        # one sigma for all: the largest given (the strictest group's); the ledger checks it
        return {"noise_multiplier": max(cfg.noise_multipliers)}

    def plan_summary(self, plan, setting):
        if not plan.private:
            return {}
        return {"noise_magnitude": gdpfed.noise_magnitude(plan.noise_multipliers_sq[:1],
                                                          setting.clip)}


class GDPFed(Method):
    name = "gdpfed"
    summary = "GDPFed (paper 000 Alg. 1): each privacy group's own noise at one sampling rate"
    planner = staticmethod(plans.plan_gdpfed)

    def plan_summary(self, plan, setting):
        """Lambda of equal rates (003 Problem 1 with q_m = q)."""
        return {"noise_magnitude": gdpfed.noise_magnitude(plan.noise_multipliers_sq,
                                                          setting.clip)}


class GDPFedOpc(GDPFed):
    name = "gdpfed_opc"
    summary = "GDPFed-opc: GDPFed with per-group sampling rates from Problem 1 (paper 000/003)"
    planner = staticmethod(plans.plan_gdpfed_opc)
    uses_rates = True

    def plan_summary(self, plan, setting):
        return noise_magnitude_at_rates(plan, setting)


class GDPFedPlus(GDPFedOpc):
    name = "gdpfed_plus"
    summary = "GDPFed+: GDPFed-opc with per-group top-k sparsification (paper 000 Sec. V)"
    planner = staticmethod(plans.plan_gdpfed_plus)

    def config_errors(self, cfg):
        yield from super().config_errors(cfg)
        keep = cfg.keep_fractions
        if keep is not None and (len(keep) != len(cfg.budgets)
                                 or any(not 0 < k <= 1 for k in keep)):
            yield "keep_fractions", keep, "needs one fraction in (0, 1] per group"

    def plan_kwargs(self, cfg):
        kwargs = super().plan_kwargs(cfg)
        if cfg.keep_fractions is not None:
            kwargs["keep_fractions"] = cfg.keep_fractions
        return kwargs

    def implied_config(self, cfg):
        """keep_fractions unset is the planner's default k_m/d (GDPFed Sec. VI-A's
        (0.7, 0.8, 0.9))."""
        default = inspect.signature(self.planner).parameters["keep_fractions"].default
        return {"keep_fractions": [float(k) for k in default]}
