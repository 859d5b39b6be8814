"""IDP-FedAvg (paper 004, Boenisch et al.): individualized privacy by per-group sampling rates
(SAMPLE, one shared sigma) or per-group clips (SCALE), as GDPFed's baselines (003 App. B.2),
and in paper 004's own form with adaptive clipping (Andrew et al. 2021)."""
from __future__ import annotations

import functools

import numpy as np

from ..algorithms.plan import MethodPlan, PrivacySetting, combination_weights, grouped_plan
from ..config_keys import ConfigKey
from ..privacy import gdpfed, idp
from .base import FactoryOptions, Method
from .gdpfed import noise_magnitude_at_rates

# adaptive_clipping: "ours" (seeded, both backends) or "tff" (TFF's own factory)
ADAPTIVE_CLIPPINGS = ("ours", "tff")
CONFIG_KEYS = (
    ConfigKey("adaptive_clipping", "str", "ours", "idp_fedavg's adaptive clipping: \"ours\" "
              "(seeded, both backends) or \"tff\" (TFF's factory)",
              choices=ADAPTIVE_CLIPPINGS),
)


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
    return grouped_plan("idp_sample", setting, rates, noise_multipliers=[sigma] * m)


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


class _Individualized(Method):
    fedavg_round = True

    def config_errors(self, cfg):
        yield from super().config_errors(cfg)
        if cfg.sampling == "fixed":
            yield ("sampling", cfg.sampling, f"{self.name} calibrates for Poisson sampling "
                   "(Bernoulli draws per client); use sampling='poisson'")
        if cfg.noise_multipliers is not None:
            yield ("noise_multipliers", cfg.noise_multipliers, f"not used by method "
                   f"{self.name!r} (its sigma comes from its own calibration)")

    def plan_kwargs(self, cfg):
        return {}


class IDPSample(_Individualized):
    name = "idp_sample"
    summary = "IDP-FedAvg SAMPLE (Boenisch et al. 2023): one sigma, per-group sampling rates"
    planner = staticmethod(plan_idp_sample)
    uses_rates = True              # fixed rates, e.g. 003 App. B.2's printed ones

    def plan_version(self, cfg):
        return 1                   # SAMPLE's rates on the full RDP orders

    def plan_summary(self, plan, setting):
        return noise_magnitude_at_rates(plan, setting)


class IDPScale(_Individualized):
    name = "idp_scale"
    summary = "IDP-FedAvg SCALE (Boenisch et al. 2023): one rate, per-group clips scaling the noise"
    planner = staticmethod(plan_idp_scale)


class IDPFedAvg(_Individualized):
    """SAMPLE's rates and sigma with adaptive clipping: ``adaptive_clipping="ours"`` is
    GroupGaussianFactory with Andrew et al.'s adaptive clip and seeded noise (deterministic,
    resumable, both backends); ``"tff"`` is TFF's ``DifferentiallyPrivateFactory.
    gaussian_adaptive`` itself (initial clip 0.1, target quantile 0.5, learning rate 0.2),
    whose noise is unseeded (TFF backend only)."""
    name = "idp_fedavg"
    config_keys = CONFIG_KEYS
    summary = "IDP-FedAvg as paper 004 runs it: SAMPLE's rates with adaptive clipping"
    planner = staticmethod(plan_idp_fedavg)
    adaptive_clip = True

    def plan_version(self, cfg):
        return 1                   # SAMPLE's rates on the full RDP orders

    @staticmethod
    def _adaptive_noise(plan):
        """(expected cohort, noise multiplier z, clipped-count noise std) of ``plan``."""
        cohort = float(plan.expected_cohorts[0])
        z = float(plan.noise_multipliers[0])
        return cohort, z, idp.clipped_count_stddev(z, cohort)

    def _refuse_for_tffs_factory(self, options, record_sum: bool):
        """ValueError for what TFF's own factory (adaptive_clipping='tff') cannot take."""
        if options.shared_masks is not None:
            raise ValueError(f"the aggregator of {self.name!r} with adaptive_clipping="
                             "'tff' cannot keep its noise off the personal part")
        if record_sum and options.record_aggregation_factory is not None:
            raise ValueError(f"record_aggregation_factory: {self.name} with "
                             "adaptive_clipping='tff' aggregates with TFF's own factory; "
                             "pass it none")

    def aggregation_query(self, plan, cfg, noise_seed, options=FactoryOptions()):
        """GDPFed's query with adaptive clipping (paper 004; ``queries.AdaptiveClipping``,
        the value noise raised for the clipped count's share, ``idp.value_noise_multiplier``);
        None with ``adaptive_clipping='tff'``: TFF's own factory, no query of ours."""
        if cfg.adaptive_clipping == "tff":
            self._refuse_for_tffs_factory(options, record_sum=False)
            return None
        from ..queries import AdaptiveClipping
        _, z, count_std = self._adaptive_noise(plan)
        z_value = idp.value_noise_multiplier(z, count_std)
        return self._group_gaussian_query(
            plan, cfg, noise_seed, options, noise_stddevs=[z_value * plan.clips[0]],
            adaptive=AdaptiveClipping(z_value, count_std, idp.ADAPTIVE_TARGET_QUANTILE,
                                      idp.ADAPTIVE_LEARNING_RATE))

    def aggregation_factory(self, plan, cfg, noise_seed, options=FactoryOptions()):
        """Our query's factory, or with ``adaptive_clipping='tff'`` TFF's
        ``DifferentiallyPrivateFactory.gaussian_adaptive`` at the same settings."""
        if cfg.adaptive_clipping != "tff":
            return super().aggregation_factory(plan, cfg, noise_seed, options)
        self._refuse_for_tffs_factory(options, record_sum=True)
        cohort, z, count_std = self._adaptive_noise(plan)
        from ..runtime import import_tff
        tff = import_tff()
        return tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive(
            noise_multiplier=z, clients_per_round=cohort,
            initial_l2_norm_clip=float(plan.clips[0]),
            target_unclipped_quantile=idp.ADAPTIVE_TARGET_QUANTILE,
            learning_rate=idp.ADAPTIVE_LEARNING_RATE, clipped_count_stddev=count_std)

    def noise_drawn_by(self, cfg):
        """TFF's ``DifferentiallyPrivateFactory`` adds its noise to the server-placed sum:
        server-drawn whatever ``noise_draw`` says."""
        return "group" if cfg.adaptive_clipping == "tff" else cfg.noise_draw

    def summary_extras(self, plan, cfg):
        return {"clipped_count_stddev": idp.clipped_count_stddev(
            float(plan.noise_multipliers[0]), float(plan.expected_cohorts[0])),
            "adaptive_clipping": cfg.adaptive_clipping}
