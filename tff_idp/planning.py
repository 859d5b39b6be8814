"""A run's privacy plan, before any data or TensorFlow: each client's privacy group, the
privacy setting the methods plan for, every method's plan checked by the ledger against the
budgets, and the ledger itself. The engine (``engine.experiment``), the library
(``learning.plan``) and the reports plan through these same functions."""
from __future__ import annotations

import numpy as np

from .algorithms.plan import MethodPlan, PrivacySetting
from .config import ConfigError
from .data import assign_groups
from .experiment_config import ExperimentConfig
from .methods import METHODS
from .privacy import BudgetExceededError, PrivacyLedger


def new_ledger(cfg: ExperimentConfig, groups: np.ndarray, setting: PrivacySetting,
               plan: MethodPlan) -> PrivacyLedger:
    """The ledger of one method's run: every client's budget, its group, and how the plan's
    releases are accounted (observed per-client rows for PFA's per-row accounting)."""
    return PrivacyLedger(budgets=np.asarray(cfg.budgets)[groups], groups=groups,
                         delta=setting.delta, accountant=cfg.accountant,
                         sampling=cfg.sampling, group_sizes=list(setting.group_sizes),
                         observed_groups=tuple(plan.observed_groups),
                         server_accountant=cfg.server_accountant)


def plan_method(cfg: ExperimentConfig, method: str, setting: PrivacySetting) -> MethodPlan:
    """The method's plan (its plug-in reads the config keys it uses), or a one-line
    ConfigError when the setting admits none."""
    try:
        return METHODS[method].plan(cfg, setting)
    except ValueError as e:
        raise ConfigError(f"methods={method!r}: cannot plan it ({e})") from e


def privacy_setting(cfg: ExperimentConfig, group_sizes) -> PrivacySetting:
    """The privacy setting the methods plan for: ``cfg``'s budgets, delta, rounds, rate,
    clip, accountant and sampling, with ``group_sizes`` clients per privacy group."""
    return PrivacySetting(budgets=list(cfg.budgets), group_sizes=list(group_sizes),
                          delta=cfg.resolved_delta, rounds=cfg.rounds,
                          expected_rate=cfg.expected_rate, clip=cfg.clip,
                          accountant=cfg.accountant, tolerance=cfg.calibration_tolerance,
                          sampling=cfg.sampling, group_weighting=cfg.group_weighting)


def checked_plan(cfg: ExperimentConfig, method: str, setting: PrivacySetting,
                 groups: np.ndarray, key: str = "methods") -> MethodPlan:
    """``method``'s plan, refused (one line naming ``key``) when the ledger finds that its
    ``cfg.rounds`` rounds overspend any client's budget (``groups``: each client's group)."""
    plan = plan_method(cfg, method, setting)
    if plan.private and METHODS[method].checks_budgets:
        try:
            new_ledger(cfg, groups, setting, plan).check_plan(
                [plan.round_mechanisms()] * cfg.rounds)
        except BudgetExceededError as e:
            raise ConfigError(f"{key}={method!r}: {e}") from e
    return plan


def plan_all(cfg: ExperimentConfig):
    """Groups, the privacy setting and every method's plan, each checked against the
    budgets by the ledger: (client groups, setting, {method: plan}). Needs no data."""
    groups = assign_groups(cfg.num_clients, cfg.group_ratios, cfg.seed)
    sizes = [int(np.sum(groups == g)) for g in range(len(cfg.budgets))]
    if min(sizes) == 0:
        raise ConfigError(f"group_ratios={cfg.group_ratios}: a group has no client among "
                          f"num_clients={cfg.num_clients}")
    setting = privacy_setting(cfg, sizes)
    plans = {method: checked_plan(cfg, method, setting, groups) for method in cfg.methods}
    return groups, setting, plans


def plan_summary(plan: MethodPlan, setting: PrivacySetting) -> dict:
    """Rates, sigma^2, keep fractions and what the method adds (e.g. the noise magnitude
    Lambda of ``gdpfed.noise_magnitude``)."""
    out = {"rates": plan.rates, "noise_multipliers_sq": plan.noise_multipliers_sq,
           "keep_fractions": plan.keep_fractions}
    return out | METHODS[plan.method].plan_summary(plan, setting)
