"""MS-PAFL (paper 002, Li et al.: model splitting and random client participation) and its
baseline, local-DP FedAvg without splitting or amplification.

One round (002 Algorithm 1, as reconstructed in the project's notes):
- check-in (eq. 10): each client joins with probability p (``expected_rate``), on its own;
  the cohort size varies and may be 0 (the round then keeps the model);
- local work (eq. 2b): Q = ``local_steps`` steps of plain SGD on *all* coordinates, batch b,
  from (its own private part, the global public part); its Qb examples drawn without
  (``data_sampling = "wor"``: Q disjoint batches) or with replacement (``"wr"``), eq. 9;
- the private part (``personal``, default ``"rows:half"``: the first half of the input rows
  of the first Dense kernel, the paper's "first half of the parameters") stays on the client,
  never clipped, noised or sent;
- upload (eqs. 11-12): the public part of the *model*, clipped to C in the norm of the public
  part, plus the client's own N(0, sigma^2) with the full sigma of Lemma 1 (local DP):
  sigma = 2C sqrt(2 ln(1.25 / delta_l)) / eps_l (s = 2C: a clipped model lies in a ball of
  radius C; the paper never states its s);
- server (eq. 13): the public part is *replaced* by sum / (nu |X^t|), nu = 1 - prod (1 - p_i)
  (``aggregators.LocalGaussianFactory``); every client receives it (Alg. 1 line 20).

``ldp_fedavg`` ("DP-FedAvg, which does not employ model splitting or any privacy
amplification mechanism", 002's baseline): the same machinery with the whole model public and
every client in every round (p = 1).

Privacy (what the run summary reports, :meth:`MSPAFL.privacy_summary`): record-level, replace
one record of one client's data; each client draws its noise. The paper's bounds
(``tff_idp.privacy.mspafl``: Corollary 1 per round, Theorem 4 for the global model with its
total delta, Theorem 3 per client) beside an RDP value of the same per-client mechanism
(dp-accounting; without replacement only: no accountant supports with-replacement
subsampling), with a flag where Theorem 3 is below the RDP value. The ledger's per-client
epsilon is the client-level reading of the check-in (Poisson sampling of clients, z =
sigma / C), for comparison; budgets are not checked against it.

The paper's bounds and the RDP cross-check assume a round's upload depends on that round's
local subsample only. MS-PAFL's private half is trained on earlier subsamples and stays on
the client, so earlier records feed later uploads: the amplification by *local subsampling*
that Corollary 1, Theorems 3-4 and the RDP cross-check rely on does not hold for it
(amplification by check-in survives: by convexity, a round the client does not check in to
releases nothing of it). ``ms_pafl``'s summary therefore says that Theorem 4's table
epsilon does not cover the private half (``guarantee.table_epsilon_covers = false`` with the reason)
and reports the bound that does hold, ``covering_epsilon_max``: every upload is a Gaussian
release of a clipped model (any two lie 2C apart, noise sigma), composed over the client's
participations without amplification, against the server and the global model's viewers alike
(``guarantee.valid = true``, shown in both columns of the run table). And whoever sees a
client's personalised model sees the private half itself, which no noise touches: against
that observer MS-PAFL is not private (``guarantee.observers.personalised_model_viewers``,
epsilon "not private"); the report's "averaged model" (every client's private half
averaged) is not private either.

What else a round releases: the realised check-in count |X^t| (the server divides by
nu |X^t|, eq. 13) and, in a round nobody checked in to, nothing at all (the model is kept,
``aggregators.local_gaussian``). Both are functions of the clients' check-in coins alone, not
of any record, so under the record-level relation they have the same distribution on
neighbouring data sets and cost nothing; the covering bound (no amplification) is
unaffected. They are not covered by the *client-level* reading of the check-in
(``client_level_checkin_epsilon``: add/remove one client, for comparison only), which says so.
"""
from __future__ import annotations


import numpy as np

from ..algorithms.plan import MethodPlan
from ..config_keys import ConfigKey
from ..key_ranges import PROBABILITY_OPEN, Range
from ..privacy import mspafl
from ..privacy.gaussian_releases import composed_gaussian_epsilon
from .base import FactoryOptions, Method

# paper 002's keys (MS-PAFL's and LDP-FedAvg's)
CONFIG_KEYS = (
    ConfigKey("local_epsilon", "Optional[float]", None, "MS-PAFL (paper 002): eps_l of each "
              "upload (Lemma 1)", range=Range(0, 700, low_open=True,
                                                 why="e^epsilon must be a float")),
    ConfigKey("local_delta", "float", 1e-4, "MS-PAFL: delta_l of each upload (Lemma 1)",
              range=PROBABILITY_OPEN),
    ConfigKey("checkin_beta", "float", 0.25, "MS-PAFL: beta of Theorem 2's check-in bound",
              range=Range(0, 1, low_open=True, high_open=True,
                          why="a fraction of the clients (002 Theorem 2)")),
    ConfigKey("composition_delta", "float", 1e-4,
              "MS-PAFL: delta~ of Theorem 4's composition", range=PROBABILITY_OPEN),
)

PERSISTENT_STATE_GAP = (
    "Theorem 4's table epsilon (and Cor. 1, Thm. 3, the RDP cross-check) amplify by local "
    "subsampling, which assumes a round's upload depends on that round's subsample only; the "
    "private half of the model is trained on earlier rounds' subsamples and stays on the "
    "client, so that amplification does not hold for it (check-in amplification survives, by "
    "convexity). covering_epsilon_max, without amplification, is the bound that holds")


# Who sees what under MS-PAFL (002 Alg. 1): the server and every viewer of an upload or of
# the global model see clipped, locally noised public parts; whoever sees a client's own
# personalised model (the client, its device, anyone it shares the model with) also sees
# the private half, trained on the client's records and never clipped or noised.
PERSONALISED_NOT_PRIVATE = (
    "a client's personalised model includes its private half, trained on the client's "
    "records and never clipped or noised (002 Alg. 1: it never leaves the client): no "
    "epsilon bounds what it reveals of those records")


def protects_against(persistent: bool) -> str:
    """The observers the covering bound holds against, in words (module docstring)."""
    covered = "the server and everyone who sees an upload or the global model"
    if not persistent:
        return covered + " (the whole model is public: there is no personalised model)"
    return (covered + " (its public part); not whoever sees a client's personalised model "
            "(its private half is not private)")


def observers(persistent: bool) -> dict:
    """``guarantee.observers`` of an MS-PAFL / LDP-FedAvg run: the covering bound for the
    server and the global model's viewers, and, where a private half is kept between rounds,
    the personalised-model viewers with the epsilon "not private"."""
    out = {"server_and_model_viewers": {
        "epsilon": "covering_epsilon_max",
        "sees": "every upload and the global model (the public part)",
        "neighbouring_relation": "replace one record of one client's data",
        "accounting": "each upload a Gaussian release, no amplification"}}
    if persistent:
        out["personalised_model_viewers"] = {
            "epsilon": "not private",
            "sees": "a client's own model, private half included",
            "why": PERSONALISED_NOT_PRIVATE}
    return out


class MSPAFL(Method):
    name = "ms_pafl"
    config_keys = CONFIG_KEYS
    summary = "MS-PAFL (paper 002): model splitting, random check-in, closed-form bounds"
    default_split = "rows:half"
    needs_personal = True
    checks_budgets = False           # record-level local DP: its own report, not the ledger's

    def checkin_rate(self, cfg) -> float:
        return cfg.expected_rate

    def config_errors(self, cfg):
        yield from super().config_errors(cfg)
        if cfg.local_epsilon is None:
            yield ("local_epsilon", cfg.local_epsilon, f"{self.name} needs eps_l, the local "
                   "budget of each upload (Lemma 1)")
        elif (isinstance(cfg.local_epsilon, (int, float)) and 0 < cfg.local_epsilon
              and isinstance(cfg.local_delta, float) and 0 < cfg.local_delta < 1
              and mspafl.lemma1_delta(cfg.local_epsilon, cfg.local_delta) > cfg.local_delta):
            yield ("local_epsilon", cfg.local_epsilon, "Lemma 1's sigma is (eps_l, "
                   f"delta_l)-DP only up to eps_l = "
                   f"{mspafl.lemma1_max_epsilon(cfg.local_delta):.3g} at local_delta="
                   f"{cfg.local_delta:g} (exact delta here "
                   f"{mspafl.lemma1_delta(cfg.local_epsilon, cfg.local_delta):.2g})")
        if cfg.noise_draw != "client":
            yield ("noise_draw", cfg.noise_draw, f"{self.name} is local DP: each client draws "
                   "its own noise; use 'client'")
        if cfg.sampling != "poisson":
            yield ("sampling", cfg.sampling, f"{self.name}'s clients check in on their own "
                   "(Bernoulli p each); use 'poisson'")
        if cfg.local_epochs is not None:
            yield ("local_epochs", cfg.local_epochs, f"{self.name} takes Q = local_steps "
                   "steps on Qb sampled examples (eq. 9)")
        if cfg.client_optimizer != "sgd" or cfg.momentum != 0:
            yield ("momentum" if cfg.momentum else "client_optimizer",
                   cfg.momentum if cfg.momentum else cfg.client_optimizer,
                   f"{self.name} uses plain SGD (eq. 2b)")
        if cfg.server_lr != 1.0:
            yield ("server_lr", cfg.server_lr, f"{self.name}'s server replaces the public "
                   "part (eq. 13); there is no server learning rate")

    def plan(self, cfg, setting) -> MethodPlan:
        """Check-in rate p for every client, sigma of Lemma 1 on the clip C."""
        sigma = mspafl.local_noise_std(cfg.local_epsilon, cfg.local_delta, cfg.clip)
        p = self.checkin_rate(cfg)
        m, n = len(setting.group_sizes), float(sum(setting.group_sizes))
        return MethodPlan(self.name, True, [p] * m, [sigma / cfg.clip] * m, [0] * m,
                          [cfg.clip], [sigma], [p * n], [1.0], [1.0])

    def plan_summary(self, plan, setting):
        return {"local_noise_std": plan.noise_stddevs[0]}

    def aggregation_query(self, plan, cfg, noise_seed, options=FactoryOptions()):
        """Each client's own Gaussian noise (local DP, 002 eq. 12) and the check-in
        normaliser (``queries.local_gaussian``)."""
        from ..queries.local_gaussian import LocalGaussianQuery
        nu = mspafl.checkin_normaliser(plan.rates[0], cfg.num_clients)
        return LocalGaussianQuery(plan.clips[0], plan.noise_stddevs[0],
                                  plan.expected_cohorts[0], nu).on_shared(options.shared_masks)

    @staticmethod
    def client_output(start, final, masks):
        """The public part of the trained model (002 eq. 11 clips it, eq. 12 noises it)."""
        return [f if m is None else f * m for f, m in zip(final, masks)]

    @staticmethod
    def server_update(weights, aggregate, server_lr, masks):
        """The public part replaced by the aggregate (002 eq. 13), the rest kept."""
        return [u if m is None else w * (1.0 - m) + u
                for w, u, m in zip(weights, aggregate, masks)]

    def check_experiment(self, exp):
        """Every client's subsampling rate exists (eq. 9: Qb distinct examples under WOR):
        the smallest client is the one that can fail."""
        cfg = exp.cfg
        smallest = min(len(i) for i in exp.client_indices)
        try:
            mspafl.subsample_rate(smallest, cfg.local_steps, cfg.batch_size, cfg.data_sampling)
        except ValueError as e:
            yield "data_sampling", cfg.data_sampling, str(e)

    def privacy_summary(self, plan, cfg, ledger, exp) -> dict:
        """The paper's bounds and an RDP value of the same mechanism, per client and
        overall (module docstring)."""
        q_steps, b, mode = cfg.local_steps, cfg.batch_size, cfg.data_sampling
        sizes = np.array([len(i) for i in exp.client_indices])
        qs = np.array([mspafl.subsample_rate(int(s), q_steps, b, mode) for s in sizes])
        p, sigma = plan.rates[0], plan.noise_stddevs[0]
        eps_l, delta_l, n = cfg.local_epsilon, cfg.local_delta, cfg.num_clients
        eps_round = mspafl.round_epsilon([p] * n, qs, eps_l, n, cfg.checkin_beta)
        delta_round = mspafl.round_delta([p] * n, qs, delta_l, n, cfg.checkin_beta)
        eps_global, delta_global = mspafl.global_epsilon(eps_round, delta_round, cfg.rounds,
                                                         cfg.composition_delta)
        theorem3 = np.array([mspafl.client_epsilon(q, eps_l, p, cfg.rounds, delta_l, cfg.clip)
                             if q < 1 else np.inf for q in qs])
        rdp_values = self._rdp(sizes, ledger.participation, sigma, cfg)
        groups = ledger.summary()["groups"]
        covering = self.covering_epsilons(ledger.participation, sigma, cfg)
        persistent = self.split_spec(cfg) != "none"    # a private part kept between rounds
        covering_accountant = cfg.server_accountant or cfg.accountant
        out = {
            "local_epsilon": eps_l, "local_delta": delta_l, "local_noise_std": sigma,
            "data_sampling": mode, "subsample_rate_mean": float(qs.mean()),
            "round_epsilon_cor1": eps_round, "round_delta_cor1": delta_round,
            "global_epsilon_thm4": eps_global, "global_delta_thm4": delta_global,
            "client_epsilon_thm3_max": float(theorem3.max()),
            "client_epsilon_thm3_mean": float(theorem3.mean()),
            "client_level_checkin_epsilon": {
                "epsilon": max(g["realised_epsilon"] for g in groups.values()),
                "delta": ledger.delta,
                "reading": "client level, for comparison: the check-in as Poisson sampling of "
                           "clients (add/remove one client, z = sigma / C; the realised count "
                           "of eq. 13 and the un-noised empty rounds depend on the target "
                           "client's check-in and are not covered)"},
            "covering_epsilon_max": float(covering.max()),
            "covering_delta": delta_l,
            "covering_bound": "per client: its uploads as Gaussian releases (replace one "
                              "record, sensitivity 2C, the full sigma), composed over its "
                              f"participations without amplification ({covering_accountant})",
            "table_epsilon": f"{eps_global:.3g} (Thm 4, delta {delta_global:.2g})"
                             + ("; not covering the private half" if persistent else ""),
            # the run table's two columns: the covering bound holds against both observers
            # of uploads and the global model; a personalised model is not private
            "viewers_epsilon_text": f"{covering.max():.3g} covering ({covering_accountant}); "
                                    f"Thm 4: {eps_global:.3g}" +
                                    ("; personalised models: not private" if persistent
                                     else ""),
            "server_epsilon_text": f"{covering.max():.3g} covering ({covering_accountant}, no "
                                   f"amplification, delta {delta_l:.2g})",
            "guarantee": {
                "neighbouring_relation": "replace one record of one client's data",
                "noise_drawn_by": "each client, the full sigma on its own upload (local DP, "
                                  "002 eq. 12)",
                "trusted_server": False,
                "protects_against": protects_against(persistent),
                "observers": observers(persistent),
                # the covering bound holds against the observers it names, whatever is kept;
                # a personalised model's viewers are named with "not private"
                "valid": True,
                "table_epsilon_covers": not persistent,
                "bounds": "the paper's closed forms (Cor. 1, Thm. 4, Thm. 3), reported as "
                          "printed; Theorem 3 is the paper's formula, not a guarantee",
                "also_released": "the realised check-in count (eq. 13) and empty rounds: "
                                 "functions of the check-in coins only, free under the "
                                 "record-level relation",
            },
        }
        if persistent:
            out["guarantee"]["table_epsilon_gap"] = PERSISTENT_STATE_GAP
        if rdp_values is None:
            out["client_epsilon_rdp"] = mspafl.WR_NO_ACCOUNTANT
        else:
            out["client_epsilon_rdp_max"] = float(np.max(rdp_values))
            below = theorem3 < rdp_values
            out["theorem3_below_rdp_clients"] = int(below.sum())
            if below.any():
                out["theorem3_below_rdp"] = (
                    f"Theorem 3 is below the RDP value of the same mechanism for "
                    f"{int(below.sum())} of {n} clients: it does not bound their loss")
        return out

    @staticmethod
    def covering_epsilons(participations, sigma, cfg):
        """Per client, the epsilon at delta_l of its uploads composed without amplification:
        each a Gaussian mechanism with replace-one sensitivity 2C (two clipped models lie at
        most 2C apart, 002 eq. C.3) and noise std sigma, so multiplier z = sigma / (2C) and
        precision k / z^2 after k participations
        (:func:`tff_idp.privacy.gaussian_releases.composed_gaussian_epsilon`)."""
        z = sigma / (2.0 * cfg.clip)
        counts = np.asarray(participations, dtype=int)
        accountant = cfg.server_accountant or cfg.accountant
        values = {k: composed_gaussian_epsilon(k / z ** 2, cfg.local_delta, accountant)
                  for k in np.unique(counts).tolist()}
        return np.array([values[k] for k in counts.tolist()])

    @staticmethod
    def _rdp(sizes, participations, sigma, cfg):
        """RDP epsilon per client over its realised participations (WOR only; None for
        WR), computed once per distinct (size, participations)."""
        if cfg.data_sampling == "wr":
            return None
        draws = cfg.local_steps * cfg.batch_size
        cache = {}
        out = []
        for s, k in zip(sizes, participations):
            key = (int(s), int(k))
            if key not in cache:
                cache[key] = mspafl.rdp_client_epsilon(sigma, cfg.clip, int(k), cfg.local_delta,
                                                       "wor", num_examples=int(s),
                                                       sample_size=draws)
            out.append(cache[key])
        return np.array(out)


class LDPFedAvg(MSPAFL):
    """002's baseline: MS-PAFL's machinery with the whole model public and p = 1."""
    name = "ldp_fedavg"
    summary = "LDP-FedAvg (paper 002's baseline): MS-PAFL's machinery with the whole model public"
    default_split = "none"
    needs_personal = False
    client_tests = True       # its one model on each client's classes, beside MS-PAFL's own

    def checkin_rate(self, cfg) -> float:
        return 1.0


__all__ = ["MSPAFL", "LDPFedAvg"]
