"""Privacy ledger: who took part in which round, and what each client has spent.

Every round the engine records, for every client, the DP event it was subjected to (its
group's sampled Gaussian mechanism: rate q and noise multiplier sigma of that round) and
whether it was in the cohort. A client's realised epsilon is the composition of the events of
the rounds actually run for it, evaluated at the run's delta; it is compared with the client's
budget. Sampling amplification is what the guarantee rests on, so a client's epsilon depends
on the rounds run and the rates and noise used, not on the draws; the participation counts are
kept beside it for inspection.

Clients with identical event histories share one accountant computation, so a ledger over
thousands of clients costs as much as one per distinct history (usually one per group).

Two observers (``tff_idp.privacy.threat_model``): the epsilons above hold against those who
see the released models, for whom the cohort is secret. The server drew the cohort, so
against it the ledger keeps a second account per client: the Gaussian releases of the rounds
the client actually took part in, composed without amplification
(``tff_idp.privacy.gaussian_releases``; ``server_precision`` = sum over those rounds of
1 / sigma^2, zero-out neighbours, sensitivity C). It is a guarantee against the server only
where the noise is drawn by the clients and summed under secure aggregation.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence

import numpy as np

from . import accounting
from .gaussian_releases import composed_gaussian_epsilon

# A round's mechanism for one client: (sampling_rate, noise_multiplier).
RoundMechanism = tuple


class BudgetExceededError(ValueError):
    """Planned or realised spending exceeds a client's budget."""


@dataclasses.dataclass
class PrivacyLedger:
    budgets: np.ndarray            # epsilon budget per client
    groups: np.ndarray             # group index per client
    delta: float
    accountant: str = "rdp"
    sampling: str = "poisson"
    group_sizes: Optional[Sequence[int]] = None   # needed for sampling="fixed"
    # groups whose clients' noised updates the server sees one by one (PFA's public rows
    # under per-row accounting): accounted as observed per-client Gaussian releases
    observed_groups: Sequence[int] = ()
    # the accountant of the server-side epsilon (None: ``accountant``); "pld" or "exact"
    # (Balle & Wang) is 10-12% tighter there than RDP's conversion
    server_accountant: Optional[str] = None

    def __post_init__(self):
        self.budgets = np.asarray(self.budgets, dtype=float)
        self.groups = np.asarray(self.groups, dtype=int)
        self.participation = np.zeros(len(self.budgets), dtype=int)
        # per client: sum of 1 / sigma^2 over the rounds it took part in (the server's view)
        self.server_precision = np.zeros(len(self.budgets), dtype=float)
        self.history: List[List[RoundMechanism]] = []   # per round: mechanism per group

    @property
    def rounds(self) -> int:
        return len(self.history)

    def snapshot(self) -> dict:
        """What a checkpoint keeps of the ledger: the rounds' mechanisms, each client's
        participations and its server-side precision."""
        return {"participation": self.participation.copy(), "history": list(self.history),
                "server_precision": self.server_precision.copy()}

    def restore(self, saved: dict) -> None:
        """The ledger as :meth:`snapshot` left it (a resumed run)."""
        participation = np.asarray(saved["participation"], dtype=int)
        if participation.shape != self.participation.shape:
            raise ValueError("the checkpoint's ledger does not fit this run's clients")
        self.participation = participation
        self.history = [[tuple(g) for g in r] for r in saved["history"]]
        self.server_precision = np.asarray(saved["server_precision"], dtype=float)

    def record_round(self, group_mechanisms: Sequence[RoundMechanism],
                     participants: Sequence[int],
                     server_multipliers: Optional[Sequence[float]] = None) -> None:
        """Record one round: ``group_mechanisms[m] = (q_m, sigma_m)``, cohort client ids,
        and per group the multiplier of what the server sees of one of them (default
        sigma_m: the group's noise on the securely aggregated sum;
        ``MethodPlan.server_multipliers``)."""
        self.history.append([tuple(map(float, g)) for g in group_mechanisms])
        ids = np.asarray(participants, dtype=int)
        np.add.at(self.participation, ids, 1)
        if server_multipliers is None:
            server_multipliers = [g[1] for g in self.history[-1]]
        sigmas = np.asarray(server_multipliers, dtype=float)[self.groups[ids]]
        with np.errstate(divide="ignore"):          # an un-noised release: infinite precision
            np.add.at(self.server_precision, ids, 1.0 / sigmas ** 2)

    def _epsilon_of_history(self, history: Sequence[RoundMechanism], group: int) -> float:
        if not history:
            return 0.0
        size = self.group_sizes[group] if self.group_sizes is not None else None
        # consecutive identical rounds are composed in one self-composed event
        runs = []
        for mech in history:
            if runs and runs[-1][0] == mech:
                runs[-1][1] += 1
            else:
                runs.append([mech, 1])
        if any(sigma == 0.0 and q > 0 for (q, sigma), _ in runs):
            return float("inf")
        runs = [r for r in runs if r[0][1] > 0.0]
        if group in self.observed_groups:
            rdp = sum(count * accounting.observed_sampled_gaussian_rdp(
                sigma, q, accounting.RDP_ORDERS) for (q, sigma), count in runs)
            return accounting.epsilon_from_rdp(accounting.RDP_ORDERS, rdp, self.delta,
                                               self.accountant) if runs else 0.0
        acc = accounting.make_accountant(self.accountant, self.sampling)
        for (q, sigma), count in runs:
            acc.compose(accounting.round_event(sigma, q, self.sampling, size), count)
        return float(acc.get_epsilon(self.delta))

    def group_epsilons(self, planned: Optional[List[List[RoundMechanism]]] = None) -> Dict[int, float]:
        history = planned if planned is not None else self.history
        out = {}
        for g in sorted(set(self.groups.tolist())):
            out[g] = self._epsilon_of_history([h[g] for h in history], g)
        return out

    def client_epsilons(self) -> np.ndarray:
        per_group = self.group_epsilons()
        return np.array([per_group[g] for g in self.groups])

    def server_epsilons(self) -> np.ndarray:
        """Per client: epsilon against the server (module docstring), with the run's
        server accountant at the run's delta; clients with equal precision share one
        computation."""
        out = np.zeros(len(self.budgets))
        for value in np.unique(self.server_precision):
            out[self.server_precision == value] = composed_gaussian_epsilon(
                float(value), self.delta, self.server_accountant or self.accountant)
        return out

    def check_plan(self, planned: List[List[RoundMechanism]], slack: float = 1e-6) -> Dict[int, float]:
        """Refuse (BudgetExceededError) a plan whose spending exceeds any client's budget."""
        spent = self.group_epsilons(planned)
        for g, eps in spent.items():
            budget = float(self.budgets[self.groups == g].min())
            if eps > budget * (1 + slack):
                clients = int(np.sum(self.groups == g))
                raise BudgetExceededError(
                    f"planned epsilon {eps:.4g} for group {g} exceeds its budget {budget:g} "
                    f"({clients} clients) after {len(planned)} rounds; lower rounds or rates, "
                    "or raise the noise")
        return spent

    def summary(self) -> dict:
        """Per group: ``realised_epsilon`` (against those who see the released models: the
        largest of its clients'), ``server_epsilon`` (against the server: the largest of its
        clients', :meth:`server_epsilons`) and the participation counts; ``within_budget``
        and ``within_budget_server`` over every client."""
        eps, server = self.client_epsilons(), self.server_epsilons()
        groups = {}
        for g in sorted(set(self.groups.tolist())):
            mask = self.groups == g
            groups[str(g)] = {
                "clients": int(mask.sum()),
                "budget": float(self.budgets[mask].min()),
                "realised_epsilon": float(eps[mask].max()),
                "server_epsilon": float(server[mask].max()),
                "participations_mean": float(self.participation[mask].mean()),
                "participations_max": int(self.participation[mask].max()),
            }
        slack = self.budgets * (1 + 1e-6)
        return {"rounds": self.rounds, "delta": self.delta, "accountant": self.accountant,
                "server_accountant": self.server_accountant or self.accountant,
                "sampling": self.sampling, "observed_groups": list(self.observed_groups),
                "within_budget": bool(np.all(eps <= slack)),
                "within_budget_server": bool(np.all(server <= slack)),
                "groups": groups}

    def client_rows(self):
        """ledger.csv's rows, one per client: its privacy group and budget, how many rounds
        it took part in, its epsilon against those who see the released models (amplified
        by the secret sampling, so a client never sampled still has the epsilon of being
        possibly sampled: the sampled Gaussian's, like every client of its group) and
        against the server (its own participations only: 0 when it never took part); the
        accountants and the delta are the run's (summary.json's privacy block)."""
        eps, server = self.client_epsilons(), self.server_epsilons()
        for i in range(len(self.budgets)):
            yield {"client": i, "privacy_group": int(self.groups[i]),
                   "budget_epsilon": float(self.budgets[i]),
                   "participations": int(self.participation[i]),
                   "epsilon_model_viewers": float(eps[i]),
                   "epsilon_server": float(server[i])}
