"""What a method is, for the round loop and the backends: a plug-in grouped the way TFF
composes a ``LearningProcess`` (distributor, client work, aggregator, finalizer), with a
planner before the rounds and a reporter after them. Each hook sits in its role's section of
:class:`Method`:

- **planner** (no TensorFlow): :meth:`Method.config_errors` (settings it cannot run with),
  :meth:`Method.check_experiment` (what the loaded data rules out), :meth:`Method.plan` with
  ``planner`` and :meth:`Method.plan_kwargs` (rates, clips, noise as a
  :class:`~tff_idp.algorithms.plan.MethodPlan` the ledger checks), ``implied_config``,
  ``plan_version``; flags ``uses_rates``, ``checks_budgets``;
- **distributor**: :meth:`Method.split_spec` (which parameters are broadcast and which stay
  personal, :mod:`tff_idp.models.split`; ``default_split``, ``needs_personal``),
  :meth:`Method.build_model`;
- **client work**: :meth:`Method.phases` (local training in phases, each training all, the
  shared or the personal parameters), :meth:`Method.reparam` (sparsified training),
  ``client_output`` (what leaves the client, by default the shared part of its model
  change); :meth:`Method.client_program` (these with the distributor's and the finalizer's
  as one ``ClientProgram``); flag ``fedavg_round`` (FedAvg's client work on the whole model
  and one aggregation of its change: the library's ``LearningProcess`` runs such a method);
- **aggregator**: :meth:`Method.aggregation_query` (clip, noise, group sums, top-k,
  reweighting: the query the fast backend runs) and :meth:`Method.aggregation_factory`
  (the TFF aggregation factory placing it, for the TFF backend),
  :meth:`Method.noise_drawn_by`; flag ``adaptive_clip``;
- **finalizer**: ``server_update`` (by default theta <- theta + server_lr * aggregate);
- **reporter**: :meth:`Method.evaluation` (the global model on the test set when nothing is
  personal; each client's own model on its own test examples otherwise:
  ``engine.evaluation``; flag ``client_tests``), ``printed_name`` (the name plots give
  it), :meth:`Method.plan_summary`,
  :meth:`Method.summary_extras`, :meth:`Method.privacy_summary`.

The round loop (``engine.loop``) names no method. Before the data it asks the planner's
hooks; then it builds the method whole, once per run, with :meth:`Method.build`: a
:class:`RoundSpec` of the plan, the client program (the distributor's and client work's hooks
composed as an ``algorithms.client_work.ClientProgram``, as FedJAX's client init / step /
final, with the finalizer's server step), the aggregation (the mechanism's query and, for
the TFF backend, its factory, built whole with :class:`FactoryOptions`) and what the
reporter evaluates and adds to the summary; the
backends (``engine.backends``: TFF and fast) run the spec. After the rounds only
:meth:`Method.privacy_summary` is asked (it reads the ledger). Adding a method is a new
plug-in module and a registry line (``tff_idp.methods``); the personal state of
personalised FL is kept in a per-client store by the runner.

Nothing here imports TensorFlow at module level: the config check and the privacy plan run
without it (a bad config is refused in well under a second). ``client_output`` and
``server_update`` are tensor arithmetic, called inside the backends' TF computations.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Iterator, List, Optional, Tuple

from ..algorithms.plan import MethodPlan, PrivacySetting
from ..algorithms.round_parts import Phase  # noqa: F401 (re-exported)
from ..algorithms.round_parts import client_output, server_update
from ..errors import ConfigError


@dataclasses.dataclass(frozen=True)
class FactoryOptions:
    """What the caller adds to a method's aggregation factory, given at construction (the
    factory, its query and the runner are never changed once built):

    - ``shared_masks``: for a model with a personal part, per tensor a 0/1 mask of the
      shared coordinates (None: wholly shared), so that the noise lands on those only
      (``tff_idp.models.split``); None when everything is shared;
    - ``client_diagnostics``: the clients also send their un-noised pre-clip norms and
      clipped indicators (a simulation diagnostic: ``privacy.threat_model``);
    - ``record_aggregation_factory``: how the noised records are summed (e.g. TFF's
      ``SecureSumFactory``); None: ``federated_sum``."""
    shared_masks: Optional[tuple] = None
    client_diagnostics: bool = False
    record_aggregation_factory: object = None

    def kwargs(self) -> dict:
        """What a factory takes beside its query built whole
        (:func:`tff_idp.aggregators.factory_of`; the shared masks are the query's)."""
        return dict(client_diagnostics=self.client_diagnostics,
                    record_aggregation_factory=self.record_aggregation_factory)


class Aggregation:
    """A method's aggregator for one run, built whole (:meth:`Method.build`): ``query``,
    the mechanism's arithmetic without TFF (:meth:`Method.aggregation_query`: what the fast
    backend runs; None where the method aggregates with a TFF factory alone), and
    ``factory``, the TFF aggregation factory (:meth:`Method.aggregation_factory`: what the
    TFF backend runs), built when first asked for, so that a run on the fast backend never
    imports TFF. Neither is changed once built."""

    def __init__(self, query, build_factory):
        self.query = query
        self._build_factory = build_factory
        self._factory = None

    @property
    def factory(self):
        if self._factory is None:
            self._factory = self._build_factory()
        return self._factory


@dataclasses.dataclass(frozen=True)
class RoundSpec:
    """A method built whole for one run (:meth:`Method.build`), what the engine and the
    backends run: the privacy ``plan``; the ``program`` (an
    ``algorithms.client_work.ClientProgram``: split, phases, sparsified training, what leaves
    a client, the server step); the ``aggregation`` (:class:`Aggregation`: the query and the
    TFF factory of clip, noise and group sums, as TFF's ``DifferentiallyPrivateFactory``,
    never changed once built); the reporter's parts: ``evaluation`` (a read-out fine-tune
    per client, or None), ``client_tests`` (the global model on each client's own test
    examples too) and ``extras`` (the run summary's entries of this method)."""
    plan: MethodPlan
    program: object
    aggregation: Aggregation
    evaluation: Optional[Dict]
    client_tests: bool
    extras: Dict


class Method:
    """The plug-in interface (module docstring). Subclasses set ``name`` and ``planner`` and
    override what differs from FedAvg with everything shared."""

    name: str = ""
    summary: str = ""              # one line for `python -m tff_idp.run --list`
    printed_name: str = ""         # as the paper prints it (plots; default: ``name``)
    # the config keys this method owns (``tff_idp.config_keys.ConfigKey``): every registered
    # method's join the core keys in the flat TOML (``tff_idp.experiment_config``)
    config_keys: tuple = ()
    # planner
    planner = None                 # f(setting, **kwargs) -> MethodPlan (plan_<name>)
    uses_rates: bool = False       # plan() passes the config's per-group ``rates`` (GDPFed-opc/+,
                                   # IDP-FedAvg SAMPLE)
    checks_budgets: bool = True    # the ledger checks the plan against every group's budget
    # distributor
    default_split: str = "none"    # the split when the config's ``personal`` is unset
    needs_personal: bool = False   # refuse personal = "none"
    # client work
    fedavg_round: bool = False     # FedAvg's client work, one aggregation of the model change
                                   # (tff_idp.learning runs these: learning.plan.FEDAVG_FAMILY)
    # aggregator
    adaptive_clip: bool = False    # the plan adapts its clip (IDP-FedAvg, paper 004)
    # reporter
    client_tests: bool = False     # also test the global model on each client's own test
                                   # examples (metrics.csv ``client_test_*``): like for like
                                   # with a personalised method's accuracy (LDP-FedAvg, 002)

    # --- the planner (pure Python): the config it accepts, its privacy plan -----------

    def config_errors(self, cfg) -> Iterator[Tuple[str, object, str]]:
        """(key, value, why) for each setting this method cannot run with; the config check
        (``tff_idp.experiment_config.validate``) reports the first as a one-line error."""
        split = self.split_spec(cfg)
        if self.needs_personal and split == "none":
            yield "personal", cfg.personal, f"{self.name} keeps a personal part; name one"
        if cfg.rates is not None and not self.uses_rates:
            from . import METHODS
            takers = ", ".join(sorted(m.name for m in METHODS.values() if m.uses_rates))
            yield ("rates", cfg.rates, f"method {self.name!r} does not take per-group rates "
                   f"(only {takers} do); remove it or run those alone")
        if split != "none" and cfg.adaptive_clipping == "tff" and self.adaptive_clip:
            yield ("adaptive_clipping", cfg.adaptive_clipping, "TFF's own factory sees the "
                   "whole model; with a personal part use 'ours'")

    def check_experiment(self, exp) -> Iterator[Tuple[str, object, str]]:
        """(key, value, why) for what the loaded data rules out (e.g. client sizes)."""
        return iter(())

    def plan_kwargs(self, cfg) -> Dict:
        """The planner's keyword arguments taken from the config."""
        kwargs = dict(local_lr=cfg.local_lr, local_steps=cfg.local_steps)
        if cfg.noise_multipliers is not None:
            kwargs["noise_multipliers"] = cfg.noise_multipliers
        return kwargs

    def plan(self, cfg, setting: PrivacySetting) -> MethodPlan:
        kwargs = self.plan_kwargs(cfg)
        if self.uses_rates and cfg.rates is not None:
            kwargs["rates"] = cfg.rates
        plan = self.planner(setting, **kwargs)
        return plan if plan.method == self.name else dataclasses.replace(plan, method=self.name)

    def implied_config(self, cfg) -> Dict:
        """{config key: the value this method reads an unset (None) key as}. The run
        fingerprint leaves a key out when it is set to exactly that value, so a run that
        spells out the method's default (e.g. Table VIII's (0.7, 0.8, 0.9) row of GDPFed+)
        is the same run as one that leaves it unset (Table II's GDPFed+)."""
        return {}

    def plan_version(self, cfg) -> int:
        """Bumped where a fix changed the numbers a plan is made of, so that results and
        checkpoints made with the old plan count as stale: 1 = fixed-size cohorts accounted
        under replace-one with sensitivity 2C (every private method), SAMPLE's rates on the
        full RDP orders (idp_sample, idp_fedavg); 0 = unchanged since the first release."""
        return 1 if cfg.sampling == "fixed" else 0

    # --- built whole: what the engine runs ---------------------------------------------

    def build(self, cfg, plan: MethodPlan, model, noise_seed: Optional[int],
              client_diagnostics: bool = False) -> RoundSpec:
        """This method for one run, on ``model`` (the config's model with this method's
        parts, :meth:`build_model`): its :class:`RoundSpec`. ``noise_seed`` seeds the
        server's draws (:meth:`aggregation_factory`); ``client_diagnostics``: the clients
        also send their un-noised norms (``privacy.threat_model``). A setting the model
        cannot take is a one-line ConfigError, before any round."""
        program = self.client_program(cfg, model)
        options = FactoryOptions(   # noise on the shared coordinates only
            shared_masks=None if program.split.trivial else tuple(program.split.masks),
            client_diagnostics=client_diagnostics)
        try:
            aggregation = Aggregation(
                self.aggregation_query(plan, cfg, noise_seed, options),
                lambda: self.aggregation_factory(plan, cfg, noise_seed, options))
            if cfg.backend != "fast":   # the TFF backend's factory now: its errors first
                aggregation.factory
        except ValueError as e:         # a factory that cannot take the personal part's masks
            if options.shared_masks is None:
                raise
            raise ConfigError(f"personal={program.split.spec!r}: {e}") from e
        return RoundSpec(plan, program, aggregation, self.evaluation(cfg), self.client_tests,
                         self.summary_extras(plan, cfg))

    def client_program(self, cfg, model):
        """The client work and server step (distributor, client work and finalizer hooks) on
        ``model``'s tensors, as an ``algorithms.client_work.ClientProgram``. A split the
        model does not have, or a read-out it lacks, is a one-line ConfigError."""
        import numpy as np
        from .. import models
        from ..algorithms.client_work import ClientProgram
        from ..models.split import split_model
        try:
            split = split_model(model, self.split_spec(cfg))
            reparam = self.reparam(cfg, model, split)
        except ValueError as e:
            raise ConfigError(str(e)) from e
        phases = self.phases(cfg)
        on_features = any(ph.on_features for ph in phases)
        if on_features or self.evaluation(cfg) is not None:
            found = models.readout(model)
            if found is None:
                what = "a" if on_features else "a copy of the model's"
                raise ConfigError(f"model={cfg.model!r}: {self.name} fine-tunes {what} linear "
                                  "read-out (a Dense head) and the model has none")
            readout = {i for tensors in found[2] for i in tensors}
            for ph in phases:                # such a phase may train the read-out only
                masks = split.trainable(ph.train) if ph.on_features else []
                if any(i not in readout and (m is None or np.any(m))
                       for i, m in enumerate(masks)):
                    raise ConfigError(
                        f"personal={split.spec!r}: {self.name} trains its personal part on "
                        "features under the read-out, so the personal part must lie in the "
                        "model's last Dense layer(s)")
        return ClientProgram(phases, split, self.client_output, self.server_update, reparam,
                             cfg.local_lr)

    # --- the distributor: what the server broadcasts, what stays with each client -----

    def split_spec(self, cfg) -> str:
        return cfg.personal if cfg.personal is not None else self.default_split

    def build_model(self, model):
        """The method's model from the config's (PPSGD adds its personal additive head)."""
        return model

    # --- client work: local training in phases, and what leaves the client ------------

    def phases(self, cfg) -> List[Phase]:
        """One phase training everything: ``local_steps`` steps or ``local_epochs`` passes
        (GDPFed Alg. 1 lines 7-10)."""
        return [Phase("all", cfg.local_steps, cfg.local_epochs)]

    def reparam(self, cfg, model, split):
        """The sparsified training of its client work (``models.reparam.TopKReparam``:
        DP-pFedDSU) or None."""
        return None

    client_output = staticmethod(client_output)    # what leaves a client (FedAvg's delta)

    # --- the aggregator: clip, noise, group sums (a TFF aggregation factory) ----------

    def aggregation_query(self, plan: MethodPlan, cfg, noise_seed: Optional[int],
                          options: FactoryOptions = FactoryOptions()):
        """The mechanism the aggregator runs, built whole: a query of ``tff_idp.queries``
        (clip, noise, group sums, top-k, reweighting; TensorFlow arithmetic without TFF),
        its noise on ``options``' shared coordinates only. The fast backend runs it and
        :meth:`aggregation_factory` places it on TFF's clients and server. GDPFed's
        group-wise Gaussian query by default. ``noise_seed`` seeds the server's draws (with
        ``cfg.noise_draw == "group"``, and empty groups): the simulator passes one derived
        from the run's seed, for reproducibility; None draws a secret one. None: the method
        aggregates with a TFF factory that has no such query (the TFF backend only); a
        plug-in that overrides :meth:`aggregation_factory` alone gets its factory's query.
        ValueError for options the query cannot take."""
        if type(self).aggregation_factory is not Method.aggregation_factory:
            return getattr(self.aggregation_factory(plan, cfg, noise_seed, options), "query",
                           None)
        return self._group_gaussian_query(plan, cfg, noise_seed, options)

    @staticmethod
    def _group_gaussian_query(plan, cfg, noise_seed, options, noise_stddevs=None, **extra):
        """GDPFed's query (Alg. 1) of ``plan``: :class:`~tff_idp.queries.GroupGaussianQuery`,
        with ``noise_stddevs`` in place of the plan's and ``extra`` (IDP-FedAvg's adaptive
        clipping)."""
        from ..queries import GroupGaussianQuery
        return GroupGaussianQuery(
            plan.clips, plan.noise_stddevs if noise_stddevs is None else noise_stddevs,
            plan.expected_cohorts, plan.weights, plan.keep_fractions,
            noise_draw=cfg.noise_draw, noise_seed=noise_seed,
            **extra).on_shared(options.shared_masks)

    def aggregation_factory(self, plan: MethodPlan, cfg, noise_seed: Optional[int],
                            options: FactoryOptions = FactoryOptions()):
        """The TFF aggregation factory of ``plan`` (what the TFF backend and the library's
        process run), built whole with ``options`` (:class:`FactoryOptions`): the query of
        :meth:`aggregation_query` placed by its factory (``aggregators.factory_of``), with
        the caller's record sum and client diagnostics. ValueError for options the
        method's factory cannot take."""
        from ..aggregators import factory_of
        if type(self).aggregation_query is not Method.aggregation_query:
            query = self.aggregation_query(plan, cfg, noise_seed, options)
        else:                   # (a plug-in's factory may call this one: not back to it)
            query = self._group_gaussian_query(plan, cfg, noise_seed, options)
        return factory_of(query, **options.kwargs())

    def noise_drawn_by(self, cfg) -> str:
        """Who draws the noise the server's sums carry: ``"client"`` (each its share, Alg. 1
        line 13) or ``"group"`` (the server): the config's ``noise_draw``."""
        return cfg.noise_draw

    # --- the finalizer: the server's step from the aggregate ---------------------------

    server_update = staticmethod(server_update)    # theta <- theta + server_lr * aggregate

    # --- the reporter: evaluation and what the run summary says -----------------------

    def evaluation(self, cfg) -> Optional[Dict]:
        """How each client's model is evaluated when the method keeps no personal part but
        fine-tunes a throw-away copy of the read-out (DP-FedAvg-fb, PMTL-FT): a dict of
        epochs, lr and which read-out tensors are tuned ("personal" or "all"); None: the
        global model (nothing personal) or each client's own model (a personal part)."""
        return None

    def plan_summary(self, plan: MethodPlan, setting: PrivacySetting) -> Dict:
        """What the run summary shows of the plan beyond rates, sigma^2 and keep fractions
        (e.g. the noise magnitude Lambda of GDPFed's Problem 1)."""
        return {}

    def summary_extras(self, plan: MethodPlan, cfg) -> Dict:
        """Top-level entries of the run summary this method adds (IDP-FedAvg: its
        clipped-count noise and which adaptive clipping ran)."""
        return {}

    def privacy_summary(self, plan: MethodPlan, cfg, ledger, exp) -> Dict:
        """The run summary's ``privacy`` block: the ledger's per-group epsilons and what
        they are a guarantee of (``privacy.threat_model.guarantee``)."""
        if not plan.private:
            return {"private": False}
        from ..privacy.threat_model import guarantee
        spent = ledger.summary()
        draw = self.noise_drawn_by(cfg)
        if draw != "client":          # no guarantee against the server: no number for it
            spent["groups"] = {g: {k: v for k, v in row.items() if k != "server_epsilon"}
                               for g, row in spent["groups"].items()}
            spent.pop("within_budget_server")
        return {**spent, "guarantee": guarantee(
            cfg.sampling, draw, plan.accounting_gap, plan.observed_groups,
            spent["within_budget"], spent.get("within_budget_server"))}
