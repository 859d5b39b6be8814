"""Paper 001's methods (``../shared/specs/paper001-dp-pfeddsu.md``): DP-pFedDSU and its four
baselines, as the public CENTAUR code runs them (snapshot 71e092e; the spec's section 3).

All five release one thing per round: the clipped, noised change of their shared tensors,
summed over the cohort (client-level DP, one sigma for the one budget, planned as DP-FedAvg
with the config's q, delta and calibration tolerance; the server step is theta += server_lr
x sum / (qN), which is 001's mean over the realised cohort when q = 1, its setting).

- ``centaur`` (DP-FedRep, CENTAUR ``methods/DP_FedRep.py``): a personal head kept by each
  client; each round it fine-tunes its stored head (``head_epochs`` at ``head_lr``, on
  features computed once), then trains the extractor with the head frozen
  (``local_epochs``) and sends the extractor's change.
- ``dp_pfeddsu`` (001 Algorithm 1): CENTAUR's round with the extractor's last
  ``dsu_layers`` kernels sparsified at every step (top-k masks, ``dsu_sparsity`` kept,
  forward on theta * M) and the norm penalty (lambda / 2) | ||(theta - theta_0) * M|| - C |
  (Eq. 10, ``dsu_lambda``); it sends (theta_tau - theta_0) * M_tau and its noise lands on
  M_tau only (Eqs. 11-13; ``models.reparam``, ``algorithms.sparse_training``).
- ``dp_fedavg_fb`` (CENTAUR ``DP_FedAvg_ft.py``): DP-FedAvg on the whole model; for
  evaluation each client fine-tunes a throw-away copy of the head (``head_epochs`` at
  ``head_lr``); nothing personal is kept.
- ``pmtl_ft`` (CENTAUR ``PMTL.py``): ``dp_fedavg_fb`` with the proximal term
  lambda ||theta - theta_global||^2 in the local loss (``pmtl_lambda``). ``pmtl_mode =
  "intended"`` gives it its gradient; ``"reference"`` is the public code's term, built
  from detached tensors, which adds a constant and no gradient: the run equals
  ``dp_fedavg_fb``.
- ``ppsgd`` (Bietti et al. 2022, CENTAUR ``PPSGD.py``): logits g(phi(x)) + p_i(phi(x));
  phi and g shared, the additive head p_i personal: each round p_i takes
  ``ppsgd_head_epochs`` at ``ppsgd_head_lr`` (kept), then phi and g train; for evaluation a
  throw-away copy of p_i is fine-tuned ``head_epochs`` at ``ppsgd_head_lr``.
"""
from __future__ import annotations

from ..config_keys import ConfigKey
from ..key_ranges import AT_LEAST_ONE, LEARNING_RATE, Range
from .base import Phase
from .fedrep import CONFIG_KEYS as PERSONAL_KEYS
from .fedrep import DPFedRep
from .gdpfed import DPFedAvg

DSU_MASKS = ("local", "global")       # dsu_mask: each client's own weights (the paper), or the
                                      # broadcast weights (one mask for every client)
PMTL_MODES = ("intended", "reference")   # pmtl_mode: the proximal term with its gradient, or
                                         # the public code's term, which has none
# paper 001's keys, shared by its five methods (each also takes FedRep's personal phase keys)
HEAD_KEYS = (
    ConfigKey("head_epochs", "int", 15, "paper 001 (DP-pFedDSU and its baselines): the head's "
              "fine-tuning epochs on features computed once (centaur, dp_pfeddsu: the stored "
              "head; dp_fedavg_fb, pmtl_ft, ppsgd: a throw-away copy for evaluation)",
              range=AT_LEAST_ONE, limit=10_000),
    ConfigKey("head_lr", "Optional[float]", None,
              "paper 001: the head's learning rate (unset: local_lr)", range=LEARNING_RATE),
)
DSU_KEYS = (
    ConfigKey("dsu_sparsity", "float", 0.05, "DP-pFedDSU: fraction S of each masked kernel "
              "kept (top-k by magnitude)", range=Range(0, 1, low_open=True,
                                                       why="the fraction kept")),
    ConfigKey("dsu_layers", "int", 4, "DP-pFedDSU: how many of the extractor's last kernels "
              "are masked", range=AT_LEAST_ONE, limit=10_000),
    ConfigKey("dsu_lambda", "float", 0.2, "DP-pFedDSU: lambda of the norm penalty (001 Eq. 10)",
              range=Range(0, 1e6)),
    ConfigKey("dsu_mask", "str", "local", "DP-pFedDSU: where masks come from: \"local\" (each "
              "client's own weights, as the paper) or \"global\" (the broadcast weights, one "
              "mask for every client)", choices=DSU_MASKS,
              note="'local': each client's own weights, the paper; 'global': the broadcast "
                   "weights"),
    ConfigKey("dsu_eval_masked", "bool", True,
              "DP-pFedDSU: evaluation uses the masked forward pass"),
)
PPSGD_KEYS = (
    ConfigKey("ppsgd_head_epochs", "int", 1, "PPSGD: epochs of its personal additive head's "
              "update each round", range=AT_LEAST_ONE, limit=10_000),
    ConfigKey("ppsgd_head_lr", "float", 0.1, "PPSGD: that update's learning rate (CENTAUR's "
              "script)", range=LEARNING_RATE),
)
PMTL_KEYS = (
    ConfigKey("pmtl_lambda", "float", 1.0, "PMTL-FT: lambda of its proximal term lambda "
              "||theta - theta_global||^2", range=Range(0, 1e6)),
    ConfigKey("pmtl_mode", "str", "intended", "PMTL-FT's proximal term: \"intended\" (with its "
              "gradient) or \"reference\" (the public code's term, which has no gradient)",
              choices=PMTL_MODES),
)


def _head_lr(cfg) -> float:
    return cfg.head_lr if cfg.head_lr is not None else cfg.local_lr


def _extractor_phase(cfg, **kwargs) -> Phase:
    return Phase("shared", cfg.local_steps, cfg.local_epochs, **kwargs)


class Centaur(DPFedRep):
    name = "centaur"
    config_keys = PERSONAL_KEYS + HEAD_KEYS
    summary = "CENTAUR (Shen et al. 2023): DP shared extractor, heads tuned on features"

    def phases(self, cfg):
        """CENTAUR's round (spec 3.4): the stored head fine-tuned on features computed once,
        then the extractor with the head frozen."""
        return [Phase("personal", cfg.personal_steps, cfg.head_epochs, lr=_head_lr(cfg),
                      on_features=True),
                _extractor_phase(cfg)]


class DPpFedDSU(Centaur):
    name = "dp_pfeddsu"
    config_keys = PERSONAL_KEYS + HEAD_KEYS + DSU_KEYS
    summary = "DP-pFedDSU (paper 001): CENTAUR with dynamically sparsified updates"

    def config_errors(self, cfg):
        yield from super().config_errors(cfg)
        if cfg.noise_draw == "group":    # the server's one draw per sum cannot follow masks
            yield ("noise_draw", cfg.noise_draw, "dp_pfeddsu masks each client's noise to its "
                   "own support; use 'client'")

    def reparam(self, cfg, model, split):
        from ..models.reparam import build_reparam
        return build_reparam(model, split, cfg.dsu_sparsity, cfg.dsu_layers, cfg.dsu_mask,
                             cfg.dsu_lambda, cfg.clip, cfg.dsu_eval_masked)

    def summary_extras(self, plan, cfg):
        return {"dsu": {"sparsity": cfg.dsu_sparsity, "masked_kernels": cfg.dsu_layers,
                        "lambda": cfg.dsu_lambda, "mask": cfg.dsu_mask,
                        "evaluation_masked": cfg.dsu_eval_masked}}

    def privacy_summary(self, plan, cfg, ledger, exp):
        """With ``dsu_mask = "local"`` each client's mask comes from its own trained weights
        and its noise lands only there, so the support of its upload reveals the mask, a
        function of its data, and a coordinate kept by m of the cohort's clients carries
        only m of their noise shares (spec 2.3): the Gaussian mechanism's analysis, hence
        the ledger's epsilon, does not cover it. ``"global"`` masks come from the broadcast
        model and every kept coordinate carries the full noise: the epsilon holds."""
        out = super().privacy_summary(plan, cfg, ledger, exp)
        if plan.private and cfg.dsu_mask == "local":
            out["guarantee"] = dict(out["guarantee"], valid=False, why_not_valid=(
                "dsu_mask='local': each client's noise lands on its own data-dependent top-k "
                "mask, which its upload's support reveals and which leaves coordinates with "
                "less than the calibrated noise; the epsilon is the paper's claim, not a "
                "bound (use dsu_mask='global')"))
        return out


class DPFedAvgFB(DPFedAvg):
    name = "dp_fedavg_fb"
    config_keys = HEAD_KEYS
    fedavg_round = False
    summary = "DP-FedAvg-fb (paper 001's baseline): DP-FedAvg, then a fine-tuned head"

    def evaluation(self, cfg):
        return {"epochs": cfg.head_epochs, "lr": _head_lr(cfg), "tune": "all"}


class PMTLFT(DPFedAvgFB):
    name = "pmtl_ft"
    config_keys = HEAD_KEYS + PMTL_KEYS
    summary = "PMTL-FT (paper 001's baseline): proximal term to the global model, fine-tuning"

    def phases(self, cfg):
        lam = cfg.pmtl_lambda if cfg.pmtl_mode == "intended" else 0.0
        return [Phase("all", cfg.local_steps, cfg.local_epochs, proximal=lam)]

    def summary_extras(self, plan, cfg):
        return {"pmtl": {"lambda": cfg.pmtl_lambda, "mode": cfg.pmtl_mode}}


class PPSGD(DPFedRep):
    name = "ppsgd"
    config_keys = PERSONAL_KEYS + HEAD_KEYS[:1] + PPSGD_KEYS
    summary = "PPSGD (paper 001's baseline): a DP global model plus a personal additive head"
    default_split = "layers:personal_head"

    def build_model(self, model):
        from ..models import with_additive_head
        return with_additive_head(model)

    def phases(self, cfg):
        return [Phase("personal", cfg.personal_steps, cfg.ppsgd_head_epochs,
                      lr=cfg.ppsgd_head_lr, on_features=True),
                _extractor_phase(cfg)]

    def evaluation(self, cfg):
        return {"epochs": cfg.head_epochs, "lr": cfg.ppsgd_head_lr, "tune": "personal"}


METHODS = (Centaur(), DPpFedDSU(), DPFedAvgFB(), PMTLFT(), PPSGD())
