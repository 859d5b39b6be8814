"""GDPFed's family (papers 000/003): FedAvg without privacy (P-FedAvg), DP-FedAvg (one sigma
for the strictest budget, 003 Algorithm 2), GDPFed (a sigma per privacy group, Theorem 1),
GDPFed-opc (Problem 1's per-group rates) and GDPFed+ (those rates and per-group Top_k,
Algorithm 1). One round for all of them: broadcast, local SGD on the whole model, clip,
noise, group sums, (top-k,) reweighted group means added to the model. They differ only in
their planners, below."""
from __future__ import annotations

import inspect
import math

import numpy as np

from ..algorithms.plan import MethodPlan, PrivacySetting, grouped_plan
from ..privacy import accounting, gdpfed
from .base import Method


def noise_magnitude_at_rates(plan, setting) -> dict:
    """Lambda (003 Problem 1) at the plan's per-group rates and keep fractions."""
    cohorts = np.asarray(plan.rates) * np.asarray(setting.group_sizes, dtype=float)
    return {"noise_magnitude": gdpfed.noise_magnitude(
        plan.noise_multipliers_sq, setting.clip, cohorts, plan.keep_fractions)}


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
    return grouped_plan("gdpfed", setting, [setting.expected_rate] * len(setting.budgets),
                        noise_multipliers=noise_multipliers)


def _optimal_rates(setting, local_lr, local_steps, sparsify):
    return gdpfed.optimal_sampling_rates(setting.budgets, setting.group_sizes,
                                         setting.expected_rate, setting.rounds, setting.delta,
                                         local_lr, local_steps, sparsify)


def plan_gdpfed_opc(setting: PrivacySetting, rates=None, local_lr=0.1, local_steps=5,
                    noise_multipliers=None, **_) -> MethodPlan:
    """GDPFed-opc (GDPFed-op in 003): Problem 1's rates (phi* = 0), no sparsification."""
    rates = rates if rates is not None else _optimal_rates(setting, local_lr, local_steps, False)
    return grouped_plan("gdpfed_opc", setting, rates, noise_multipliers=noise_multipliers)


def plan_gdpfed_plus(setting: PrivacySetting, rates=None, keep_fractions=(0.7, 0.8, 0.9),
                     local_lr=0.1, local_steps=5, noise_multipliers=None, **_) -> MethodPlan:
    """GDPFed+ (Algorithm 1): Problem 1's rates and per-group Top_k with k_m/d."""
    if len(keep_fractions) != len(setting.budgets):
        raise ValueError(f"keep_fractions={list(keep_fractions)} needs one entry per group")
    rates = rates if rates is not None else _optimal_rates(setting, local_lr, local_steps, True)
    return grouped_plan("gdpfed_plus", setting, rates, keep_fractions, noise_multipliers)


class PFedAvg(Method):
    name = "p_fedavg"
    fedavg_round = True
    summary = "FedAvg without privacy (paper 000's P-FedAvg): the accuracy ceiling"
    planner = staticmethod(plan_p_fedavg)

    def plan_kwargs(self, cfg):
        return {}

    def plan_version(self, cfg):
        return 0                   # nothing to account: unaffected by the fixed-size fix


class DPFedAvg(Method):
    name = "dp_fedavg"
    fedavg_round = True
    summary = "DP-FedAvg: one noise multiplier for all, set by the strictest budget (000/003)"
    planner = staticmethod(plan_dp_fedavg)

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
    fedavg_round = True
    summary = "GDPFed (paper 000 Alg. 1): each privacy group's own noise at one sampling rate"
    planner = staticmethod(plan_gdpfed)

    def plan_summary(self, plan, setting):
        """Lambda of equal rates (003 Problem 1 with q_m = q)."""
        return {"noise_magnitude": gdpfed.noise_magnitude(plan.noise_multipliers_sq,
                                                          setting.clip)}


class GDPFedOpc(GDPFed):
    name = "gdpfed_opc"
    summary = "GDPFed-opc: GDPFed with per-group sampling rates from Problem 1 (paper 000/003)"
    planner = staticmethod(plan_gdpfed_opc)
    uses_rates = True

    def plan_summary(self, plan, setting):
        return noise_magnitude_at_rates(plan, setting)


class GDPFedPlus(GDPFedOpc):
    name = "gdpfed_plus"
    summary = "GDPFed+: GDPFed-opc with per-group top-k sparsification (paper 000 Sec. V)"
    planner = staticmethod(plan_gdpfed_plus)

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
