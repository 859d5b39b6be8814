"""IDP-FedAvg (paper 004, Boenisch et al.): individualized privacy by per-group sampling rates
(SAMPLE, one shared sigma) or per-group clips (SCALE), as GDPFed's baselines (003 App. B.2),
and in paper 004's own form with adaptive clipping (Andrew et al. 2021)."""
from __future__ import annotations

from ..algorithms import plan as plans
from ..privacy import idp
from .base import Method
from .gdpfed import noise_magnitude_at_rates

# adaptive_clipping: "ours" (seeded, both backends) or "tff" (TFF's own factory)
ADAPTIVE_CLIPPINGS = ("ours", "tff")


class _Individualized(Method):
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
    planner = staticmethod(plans.plan_idp_sample)
    uses_rates = True              # fixed rates, e.g. 003 App. B.2's printed ones

    def plan_version(self, cfg):
        return 1                   # SAMPLE's rates on the full RDP orders

    def plan_summary(self, plan, setting):
        return noise_magnitude_at_rates(plan, setting)


class IDPScale(_Individualized):
    name = "idp_scale"
    summary = "IDP-FedAvg SCALE (Boenisch et al. 2023): one rate, per-group clips scaling the noise"
    planner = staticmethod(plans.plan_idp_scale)


class IDPFedAvg(_Individualized):
    """SAMPLE's rates and sigma with adaptive clipping: ``adaptive_clipping="ours"`` is
    GroupGaussianFactory with Andrew et al.'s adaptive clip and seeded noise (deterministic,
    resumable, both backends); ``"tff"`` is TFF's ``DifferentiallyPrivateFactory.
    gaussian_adaptive`` itself (initial clip 0.1, target quantile 0.5, learning rate 0.2),
    whose noise is unseeded (TFF backend only)."""
    name = "idp_fedavg"
    summary = "IDP-FedAvg as paper 004 runs it: SAMPLE's rates with adaptive clipping"
    planner = staticmethod(plans.plan_idp_fedavg)
    adaptive_clip = True

    def plan_version(self, cfg):
        return 1                   # SAMPLE's rates on the full RDP orders

    def aggregation_factory(self, plan, cfg, noise_seed):
        cohort = float(plan.expected_cohorts[0])
        z = float(plan.noise_multipliers[0])
        count_std = idp.clipped_count_stddev(z, cohort)
        if cfg.adaptive_clipping == "tff":
            from ..runtime import import_tff
            tff = import_tff()
            return tff.aggregators.DifferentiallyPrivateFactory.gaussian_adaptive(
                noise_multiplier=z, clients_per_round=cohort,
                initial_l2_norm_clip=float(plan.clips[0]),
                target_unclipped_quantile=idp.ADAPTIVE_TARGET_QUANTILE,
                learning_rate=idp.ADAPTIVE_LEARNING_RATE, clipped_count_stddev=count_std)
        from ..aggregators import GroupGaussianFactory
        from ..queries import AdaptiveClipping
        z_value = idp.value_noise_multiplier(z, count_std)
        return GroupGaussianFactory(
            plan.clips, [z_value * plan.clips[0]], plan.expected_cohorts, plan.weights,
            plan.keep_fractions,
            adaptive=AdaptiveClipping(z_value, count_std, idp.ADAPTIVE_TARGET_QUANTILE,
                                      idp.ADAPTIVE_LEARNING_RATE),
            noise_draw=cfg.noise_draw, noise_seed=noise_seed)

    def noise_drawn_by(self, cfg):
        """TFF's ``DifferentiallyPrivateFactory`` adds its noise to the server-placed sum:
        server-drawn whatever ``noise_draw`` says."""
        return "group" if cfg.adaptive_clipping == "tff" else cfg.noise_draw

    def summary_extras(self, plan, cfg):
        return {"clipped_count_stddev": idp.clipped_count_stddev(
            float(plan.noise_multipliers[0]), float(plan.expected_cohorts[0])),
            "adaptive_clipping": cfg.adaptive_clipping}
