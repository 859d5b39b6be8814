"""Experiment specification: a dataclass, loaded from TOML, overridden by ``--set``, validated.

Every check raises :class:`ConfigError` with one line naming the key and the value; the CLI
turns it into exit status 2 before any work starts.
"""
from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from pathlib import Path
from typing import Dict, List, Optional

from .algorithms.plan import GROUP_WEIGHTINGS
from .audit.bounds import MAX_CANARIES
from .data import FEDERATED, SOURCES
from .data.partition import PARTITIONS
from .data.sources import default_tfds_dir
from .atomic import check_writable_dir
from .errors import ConfigError, did_you_mean  # noqa: F401 (importers take ConfigError here)
from .errors import fail as _fail
from .key_ranges import (AT_LEAST_ONE, LEARNING_RATE, NON_NEGATIVE, POSITIVE,
                         PROBABILITY_OPEN, Range)
from .key_ranges import check as check_range
from .methods import METHODS
from .methods.registry import BROKEN_PLUGINS
from .methods import fedrep, mspafl, pfeddsu
from .methods.idp import ADAPTIVE_CLIPPINGS
from .methods.pfa import PFA_ACCOUNTINGS, PFA_PROJECTIONS, PFA_PUBLIC_NOISES
from .methods.pfeddsu import DSU_MASKS, PMTL_MODES
from .models.split import check_spec
from .privacy.accounting import ACCOUNTANTS, RDP_ACCOUNTANTS, SERVER_ACCOUNTANTS
from .privacy.mspafl import DATA_SAMPLINGS
from .privacy.threat_model import NOISE_DRAWS
from .runtime import DEVICES
from .sampling import SAMPLINGS


@dataclasses.dataclass
class ExperimentConfig:
    """Keys of an experiment config (TOML). Defaults are the embedded offline default."""
    # results go to <output_dir>/<name>/ (default: the config file's name without .toml;
    # "digits-default" for the embedded default)
    name: str = "digits-default"
    # run one after another and compared; the registered methods (tff_idp.methods, with
    # those other packages register):
    methods: List[str] = dataclasses.field(
        default_factory=lambda: ["p_fedavg", "dp_fedavg", "gdpfed", "gdpfed_plus"])
    dataset: str = "digits"                   # data source (tff_idp.data.SOURCES)
    # TFDS directory for the real image sets (default: $TFDS_DATA_DIR, else datasets/tfds)
    data_dir: str = dataclasses.field(default_factory=lambda: default_tfds_dir())
    # built federated sets and partitions (<data_root>/built), TFF's sqlite cache
    # (<data_root>/tff), raw downloads (<data_root>/raw), shakespeare-leaf
    data_root: str = "datasets"
    allow_download: bool = False              # let TFDS download a missing data set
    model: str = "logistic"                   # model builder (tff_idp.models.MODELS)
    num_clients: int = 500                    # n: clients the training set is split into
    # "iid", "dirichlet" (a class's examples spread over clients by Dir(lambda)),
    # "dirichlet_per_client" (each client's class shares ~ Dir(lambda), sizes kept: Hsu et al.),
    # "pachinko", "classes" (s classes each, dealt round-robin),
    # "dealt_classes" (s class slots each, dealt at random as FedRep/CENTAUR), "shards" (label
    # subsets) or "natural" (the data set's own clients: femnist, tff_shakespeare,
    # tff_cifar100, shakespeare-leaf)
    partition: str = "iid"
    # dirichlet, dirichlet_per_client: concentration lambda; classes, dealt_classes: classes
    # per client s; pachinko: alpha (TFF's 0.1; beta = 10); shards: shards per client (default
    # 1); unused otherwise
    partition_param: Optional[float] = None
    # fraction of clients in each privacy group (sums to 1)
    group_ratios: List[float] = dataclasses.field(default_factory=lambda: [1 / 6, 2 / 6, 3 / 6])
    # epsilon budget of each group, strictest first
    budgets: List[float] = dataclasses.field(default_factory=lambda: [0.5, 1.5, 3.0])
    delta: Optional[float] = None             # default 1 / n^1.1
    rounds: int = 40                          # T: communication rounds
    expected_rate: float = 0.1                # q: expected cohort q n per round
    clip: float = 1.0                         # C: clipping norm of a client's update
    local_lr: float = 0.1                     # eta, decayed by lr_decay every round
    lr_decay: float = 0.99                    # eta_t = local_lr * lr_decay^t
    momentum: float = 0.0                     # heavy-ball momentum of client SGD
    local_steps: int = 5                      # tau mini-batch steps per round
    local_epochs: Optional[int] = None        # if set: E passes over the client's data instead
    client_optimizer: str = "sgd"             # "sgd" (momentum) or "adam" (paper 004)
    server_lr: float = 1.0                    # theta += server_lr * aggregate
    batch_size: int = 10                      # client mini-batch size
    # Top_k kept fraction k_m/d per group (GDPFed+; unset: the paper's (0.7, 0.8, 0.9))
    keep_fractions: Optional[List[float]] = None
    sampling: str = "poisson"                 # "poisson" or "fixed" (without replacement)
    accountant: str = "rdp"                   # "rdp", "rdp_basic" (003 Lemma 4) or "pld"
    # of the epsilon against the server (Gaussian releases composed without sampling): one
    # of those or "exact" (Balle & Wang; PLD and exact are 10-12% below RDP there); unset:
    # the run's accountant
    server_accountant: Optional[str] = None
    group_weighting: str = "paper"            # "paper" (omega_m on group sums) or "normalized"
    calibration_tolerance: Optional[float] = None   # e.g. 0.01: the GDPFed authors' search
    # override per-group rates (gdpfed_opc/_plus, idp_sample)
    rates: Optional[List[float]] = None
    noise_multipliers: Optional[List[float]] = None  # override sigma_m (ledger still checks)
    # idp_fedavg's adaptive clipping: "ours" (seeded, both backends) or "tff" (TFF's factory)
    adaptive_clipping: str = "ours"
    # client-side noise: each client draws its share ("client", Alg. 1 line 13 as written) or
    # the server draws each group sum's noise once ("group": same distribution, far cheaper)
    noise_draw: str = "client"
    # PFA's public clients: "paper" (the GDPFed adaptation: accounted as an amplified noised
    # sum, which their one-by-one rows are not: the run is marked privacy.valid = false) or
    # "per-row" (each row a Gaussian release of one client the server sees; noise calibrated
    # to the public group's budget)
    pfa_accounting: str = "paper"
    # PFA's public clients add their group's "full" noise (their rows are seen one by one) or
    # only their "share" of the group sum's (a diagnostic reading, not private: docs/privacy.md)
    pfa_public_noise: str = "full"
    # PFA's projection of the private mean around the public mean: "per-layer" (each model
    # tensor its own rank-1 subspace, as the original code does) or "global" (one subspace of
    # the whole update)
    pfa_projection: str = "per-layer"
    # the canary audit (tff_idp.audit): this many canary clients in privacy group
    # audit_group, each inserted with probability 1/2; 0: no audit
    audit_canaries: int = 0
    audit_group: int = 0                      # the audited privacy group (0: the strictest)
    # a private run's clients' un-noised train loss, pre-clip norm and clipped fraction:
    # never sent by the protocol; true: measured by the simulator and written to metrics.csv
    # as sim_* columns (tff_idp.privacy.threat_model.CLIENT_DIAGNOSTICS, docs/privacy.md)
    simulation_diagnostics: bool = False
    # the personal part of the model, kept by each client (tff_idp.models.split): "none",
    # "head", "rows:A-B" (input rows of the first Dense kernel), "layers:NAME,NAME"; unset:
    # the method's own (fedrep, dp_fedrep: "head"; the others: "none")
    personal: Optional[str] = None
    personal_steps: int = 5                   # fedrep: steps on the personal part first ...
    personal_epochs: Optional[int] = None     # ... or passes over the client's data
    # paper 001 (DP-pFedDSU and its baselines): the head's fine-tuning epochs on features
    # computed once (centaur, dp_pfeddsu: the stored head; dp_fedavg_fb, pmtl_ft, ppsgd: a
    # throw-away copy for evaluation)
    head_epochs: int = 15
    # paper 001: the head's learning rate (unset: local_lr)
    head_lr: Optional[float] = None
    weight_decay: float = 0.0                 # client SGD: g + weight_decay * theta (PyTorch)
    # DP-pFedDSU: fraction S of each masked kernel kept (top-k by magnitude)
    dsu_sparsity: float = 0.05
    # DP-pFedDSU: how many of the extractor's last kernels are masked
    dsu_layers: int = 4
    dsu_lambda: float = 0.2                   # DP-pFedDSU: lambda of the norm penalty (001 Eq. 10)
    # DP-pFedDSU: where masks come from: "local" (each client's own weights, as the paper) or
    # "global" (the broadcast weights, one mask for every client)
    dsu_mask: str = "local"
    dsu_eval_masked: bool = True              # DP-pFedDSU: evaluation uses the masked forward pass
    # PPSGD: epochs of its personal additive head's update each round
    ppsgd_head_epochs: int = 1
    # PPSGD: that update's learning rate (CENTAUR's script)
    ppsgd_head_lr: float = 0.1
    # PMTL-FT: lambda of its proximal term lambda ||theta - theta_global||^2
    pmtl_lambda: float = 1.0
    # PMTL-FT's proximal term: "intended" (with its gradient) or "reference" (the public
    # code's term, which has no gradient)
    pmtl_mode: str = "intended"
    # fraction of each client's training examples held out for validation; > 0 makes the
    # summary report the test accuracy at the round of best mean validation accuracy
    validation_fraction: float = 0.0
    local_epsilon: Optional[float] = None     # MS-PAFL (paper 002): eps_l of each upload (Lemma 1)
    local_delta: float = 1e-4                 # MS-PAFL: delta_l of each upload (Lemma 1)
    checkin_beta: float = 0.25                # MS-PAFL: beta of Theorem 2's check-in bound
    composition_delta: float = 1e-4           # MS-PAFL: delta~ of Theorem 4's composition
    data_sampling: str = "wor"                # a round's Qb examples: "wor" or "wr" (eq. 9)
    backend: str = "tff"                      # "tff" (reference) or "fast" (batched TF, GPU)
    device: str = "auto"                      # "auto", "cpu" or "gpu" (fast backend's device)
    fast_chunk_size: int = 64                 # clients the fast backend trains at once (memory)
    # independent sub-cohorts a chunk trains in, run at once by TF's inter-op threads (a
    # CPU: one per core, with TF_NUM_INTRAOP_THREADS=1; a GPU: 1); docs/backends.md
    fast_lanes: int = 1
    # seeds the partition, sampling, noise and initial model
    seed: int = 0
    # the paper's reported test accuracy (%) per method, printed beside ours
    reference: Optional[Dict[str, float]] = None
    # rounds between test evaluations (the last is always evaluated)
    eval_every: int = 1
    checkpoint_every: int = 10                # rounds between checkpoints (0: none)
    test_examples: Optional[int] = None       # evaluate on a seeded subset of this many
    # rounds before the last evaluate the global model on a seeded subset of this many test
    # examples (the convergence curve); the last round on the whole test set (or its
    # test_examples subset). For test sets too large to evaluate every round (Shakespeare's
    # 672,236 sequences: about 12 minutes on 2 CPU cores)
    curve_test_examples: Optional[int] = None
    # image inputs: "unit" (pixels / 255 in [0, 1]) or "standardize" (then minus the training
    # set's per-channel mean, over its per-channel std; an open reading of GDPFed's setup)
    input_normalization: str = "unit"
    # results go to <output_dir>/<name>/<method>-seed<seed>/
    output_dir: str = "results"

    @property
    def resolved_delta(self) -> float:
        return self.delta if self.delta is not None else 1.0 / self.num_clients ** 1.1


# keys that say where a run's files are, how often it checkpoints and what it runs on, not
# what it computes: left out of a run's fingerprint (a checkpoint resumes across them, a
# finished folder stays complete) and of a table's results folder (`--set
# fast_chunk_size=4` or `--device gpu` trains into the table's own folders)
PLACEMENT_KEYS = ("output_dir", "checkpoint_every", "device", "fast_chunk_size", "fast_lanes",
                  "data_dir", "data_root", "allow_download")
KEYS = {f.name: f for f in dataclasses.fields(ExperimentConfig)}


def _coerce(key, value):
    """Type-check one value against the dataclass field."""
    typ = KEYS[key].type
    if value is None:
        if "Optional" in str(typ):
            return None
        _fail(key, value, "must be set")
    if "Dict" in str(typ):
        if not isinstance(value, dict) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()):
            _fail(key, value, "must be a table of method = number")
        return {str(k): float(v) for k, v in value.items()}
    if "List" in str(typ):
        numbers = "float" in str(typ)
        example = f"{key}=[1.0, 2.0, 4.0]" if numbers else \
            f'{key}=["gdpfed_plus", "dp_fedavg"]'
        syntax = (f"; in TOML, e.g. --set '{example}' (quote the whole argument for the "
                  "shell)")
        if not isinstance(value, list):
            _fail(key, value, "must be a list" + syntax)
        if numbers:
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
                _fail(key, value, "must be a list of numbers" + syntax)
            return [float(v) for v in value]
        if not all(isinstance(v, str) for v in value):
            _fail(key, value, "must be a list of names" + syntax)
        return list(value)
    if "float" in str(typ):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _fail(key, value, "must be a number")
        return float(value)
    if typ is bool or str(typ) == "bool":
        if not isinstance(value, bool):
            _fail(key, value, "must be true or false")
        return value
    if "int" in str(typ):
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(key, value, "must be an integer")
        return value
    if not isinstance(value, str):
        _fail(key, value, "must be a string")
    return value


def _check_finite(cfg: ExperimentConfig) -> None:
    """NaN and inf are refused in every number and list element (a NaN noise multiplier
    made the budget check loop forever inside the RDP accountant)."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        items = value if isinstance(value, list) else [value]
        if any(isinstance(x, float) and not math.isfinite(x) for x in items):
            _fail(f.name, value, "must be finite (no nan or inf)")


# a run's or a table's name becomes a folder: no path separator, no control character, no
# leading dot or dash ('..', '.hidden', '-rf'), one line, a length every file system takes
NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+=,@ -]{0,127}")
# noise multipliers whose square and inverse square are usable floats (1e-300 squared is 0)
NOISE_MULTIPLIER_RANGE = (1e-6, 1e6)


def check_name(key: str, value) -> None:
    """ConfigError (one line) unless ``value`` is a safe folder name (:data:`NAME_PATTERN`,
    not ending in a space or a dot)."""
    if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value) or \
            value.endswith((" ", ".")):
        _fail(key, value if not isinstance(value, str) or len(value) <= 60
              else value[:60] + "...", "must be a folder name: 1-128 of letters, digits and "
              "_ . + = , @ - or spaces, starting with a letter, digit or '_', on one line")


# keys that take one of a fixed set of values, each set imported from the module that acts on
# the key. Three sets are held here because the modules that act on them import TensorFlow,
# which a config check must not load: backend (engine.backends.BACKENDS), client_optimizer
# (algorithms.client_optimizer.OPTIMIZERS), input_normalization (engine.experiment.normalized,
# which reads this set); tests/test_config_choices.py checks that those modules accept
# exactly these.
BACKEND_NAMES = ("tff", "fast")
CLIENT_OPTIMIZERS = ("sgd", "adam")
INPUT_NORMALIZATIONS = ("unit", "standardize")
CHOICES = {
    "partition": PARTITIONS,
    "input_normalization": INPUT_NORMALIZATIONS,
    "client_optimizer": CLIENT_OPTIMIZERS,
    "sampling": SAMPLINGS,
    "accountant": ACCOUNTANTS,
    "group_weighting": GROUP_WEIGHTINGS,
    "adaptive_clipping": ADAPTIVE_CLIPPINGS,
    "noise_draw": NOISE_DRAWS,
    "pfa_accounting": PFA_ACCOUNTINGS,
    "pfa_projection": PFA_PROJECTIONS,
    "pfa_public_noise": PFA_PUBLIC_NOISES,
    "backend": BACKEND_NAMES,
    "device": DEVICES,
    "dsu_mask": DSU_MASKS,
    "pmtl_mode": PMTL_MODES,
    "data_sampling": DATA_SAMPLINGS,
}
# numeric keys' ranges: the engine's here, each method's keys' from its module; one check
RANGES = {
    "seed": NON_NEGATIVE, "num_clients": AT_LEAST_ONE, "rounds": AT_LEAST_ONE,
    "checkpoint_every": NON_NEGATIVE, "test_examples": AT_LEAST_ONE,
    "curve_test_examples": AT_LEAST_ONE, "delta": PROBABILITY_OPEN,
    "expected_rate": Range(0, 1, low_open=True),
    "local_lr": LEARNING_RATE, "batch_size": POSITIVE, "local_steps": POSITIVE,
    "eval_every": POSITIVE, "local_epochs": AT_LEAST_ONE, "server_lr": LEARNING_RATE,
    "lr_decay": Range(0, 1, low_open=True), "momentum": Range(0, 1, high_open=True),
    "weight_decay": Range(0, 1e3), "validation_fraction": Range(0, 1, high_open=True),
    "fast_chunk_size": Range(1, why="a number of clients trained at once"),
    "fast_lanes": Range(1, why="a number of sub-cohorts"),
    "calibration_tolerance": Range(0, 1, low_open=True, high_open=True,
                                   why="a relative tolerance"),
    "partition_param": Range(0, 1e6, low_open=True, why="a Dirichlet or pachinko "
                             "concentration, or classes or shards per client"),
    "audit_group": NON_NEGATIVE,
    **fedrep.KEY_RANGES, **pfeddsu.KEY_RANGES, **mspafl.KEY_RANGES,
}
# what a reader of a choice key's error line needs besides its values
CHOICE_NOTES = {"dsu_mask": "'local': each client's own weights, the paper; 'global': the "
                            "broadcast weights"}


def _check_choices(cfg: ExperimentConfig) -> None:
    """Every key of :data:`CHOICES` holds one of its values."""
    for key, allowed in CHOICES.items():
        value = getattr(cfg, key)
        if value not in allowed:
            note = f" ({CHOICE_NOTES[key]})" if key in CHOICE_NOTES else ""
            _fail(key, value, f"must be {_one_of(allowed)}{note}")


def _one_of(names) -> str:
    """"'a', 'b' or 'c'": the allowed values of a key, for its error line."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _check_audit(cfg: ExperimentConfig) -> None:
    """The canary audit's keys (tff_idp.audit.canaries): a count the bounds can use, a group
    that exists, the fast backend, methods whose whole update is shared."""
    if cfg.audit_canaries == 0:
        return
    if not 2 <= cfg.audit_canaries <= MAX_CANARIES:
        _fail("audit_canaries", cfg.audit_canaries, f"must be 0 (no audit) or 2 to "
              f"{MAX_CANARIES:,}: half are inserted, and both halves need two to be scored")
    if not 0 <= cfg.audit_group < len(cfg.budgets):
        _fail("audit_group", cfg.audit_group, f"there are {len(cfg.budgets)} privacy groups "
              f"(0 to {len(cfg.budgets) - 1})")
    if cfg.backend != "fast":
        _fail("audit_canaries", cfg.audit_canaries, "the canary audit runs on "
              "backend='fast' (it feeds canaries to the fast backend's clip and noise code)")
    for m in cfg.methods:
        if METHODS[m].split_spec(cfg) != "none":
            _fail("audit_canaries", cfg.audit_canaries, f"method {m!r} keeps a personal "
                  "part; canaries audit methods whose whole update is shared")


# largest values the code represents: seeds seed numpy's and TensorFlow's 32-bit streams;
# a ledger and metrics row per round; the rest keep a round's plan within reach of memory
# (the memory estimate, engine.memory, refuses what still cannot fit); every integer key has
# one (audit_canaries its own rule in _check_audit: tests/faults/test_config_matrix.py)
LIMITS = {"seed": 2 ** 32 - 1, "rounds": 1_000_000, "num_clients": 10_000_000,
          "local_steps": 1_000_000, "batch_size": 1_000_000, "local_epochs": 10_000,
          "personal_steps": 1_000_000, "personal_epochs": 10_000, "head_epochs": 10_000,
          "ppsgd_head_epochs": 10_000, "dsu_layers": 10_000, "fast_chunk_size": 100_000,
          "fast_lanes": 64, "eval_every": 1_000_000, "checkpoint_every": 1_000_000,
          "test_examples": 100_000_000, "curve_test_examples": 100_000_000,
          "audit_group": 1_000}
# the range of every element of a list key (its length is a rule between keys: validate)
LIST_RANGES = {
    "budgets": Range(1e-3, 1e4, why="below it the calibrated noise swamps any update (a "
                     "noise multiplier in the thousands), above it the bound says nothing"),
    "group_ratios": Range(0, 1, low_open=True),
    "rates": Range(0, 1, low_open=True), "keep_fractions": Range(0, 1, low_open=True),
    "noise_multipliers": Range(*NOISE_MULTIPLIER_RANGE, why="outside it, its square or the "
                               "accountant's 1 / sigma^2 is not a usable float"),
}
# path keys: an empty string would silently mean the working folder
PATH_KEYS = ("output_dir", "data_dir", "data_root")
CLIP_RANGE = (1e-8, 1e8)


def validate(cfg: ExperimentConfig, data=None) -> ExperimentConfig:
    """``cfg`` checked key by key (one-line ConfigError). ``data``: the ArrayData of your own
    that ``cfg`` will run on (``tff_idp.api``): ``dataset`` is then its name, not a
    registered source, and ``partition = "natural"`` needs its clients."""
    from .models import MODELS
    _check_finite(cfg)
    _check_choices(cfg)
    for key in dict.fromkeys([*RANGES, *LIMITS, *LIST_RANGES]):
        _check_key(cfg, key)
    for m in cfg.methods:
        if m not in METHODS and m in BROKEN_PLUGINS:      # registered by a package, unusable
            _fail("methods", m, BROKEN_PLUGINS[m])
        if m not in METHODS:
            _fail("methods", m, f"unknown method{did_you_mean(m, METHODS)} (choose from "
                  f"{', '.join(sorted(METHODS))})")
    if not cfg.methods:
        _fail("methods", cfg.methods, "needs at least one method")
    twice = [m for i, m in enumerate(cfg.methods) if m in cfg.methods[:i]]
    if twice:                              # would train the same run twice
        _fail("methods", cfg.methods, f"names {twice[0]!r} twice")
    if data is not None:
        if cfg.partition == "natural" and data.clients is None:
            _fail("partition", cfg.partition, "your data has no clients of its own; pass "
                  "clients= or choose another partition")
    elif cfg.dataset not in SOURCES:
        _fail("dataset", cfg.dataset, f"unknown data set{did_you_mean(cfg.dataset, SOURCES)} "
              f"(python -m tff_idp.run --list shows every one)")
    if cfg.model not in MODELS:
        _fail("model", cfg.model, f"unknown model; choose from {sorted(MODELS)}")
    if cfg.partition == "natural" and data is None and cfg.dataset not in FEDERATED:
        _fail("partition", cfg.partition, f"dataset={cfg.dataset!r} has no clients of its own; "
              f"'natural' needs one of {', '.join(FEDERATED)}")
    if cfg.partition == "shards" and cfg.partition_param is not None and (
            cfg.partition_param < 1 or cfg.partition_param != int(cfg.partition_param)):
        _fail("partition_param", cfg.partition_param, "shards per client must be an integer >= 1")
    if cfg.partition in ("classes", "dealt_classes") and cfg.partition_param is not None and (
            cfg.partition_param != int(cfg.partition_param)):
        _fail("partition_param", cfg.partition_param, "classes per client must be an integer")
    if cfg.partition in ("dirichlet", "dirichlet_per_client", "classes", "dealt_classes") and \
            not (cfg.partition_param or 0) > 0:
        _fail("partition_param", cfg.partition_param,
              f"partition={cfg.partition!r} needs a positive partition_param")
    if not cfg.budgets:
        _fail("budgets", cfg.budgets, "needs one epsilon per group")
    if cfg.budgets != sorted(cfg.budgets):
        _fail("budgets", cfg.budgets, "list groups from the strictest (smallest epsilon) up")
    if len(cfg.group_ratios) != len(cfg.budgets):
        _fail("group_ratios", cfg.group_ratios, f"needs {len(cfg.budgets)} entries, one per budget")
    if abs(sum(cfg.group_ratios) - 1.0) > 1e-6:
        _fail("group_ratios", cfg.group_ratios, f"must sum to 1 (they sum to {sum(cfg.group_ratios):.6g})")
    if cfg.delta is not None and cfg.num_clients > 0 and cfg.delta >= 1 / cfg.num_clients:
        _fail("delta", cfg.delta, f"must be below 1/num_clients = {1 / cfg.num_clients:.3g} "
              f"(num_clients={cfg.num_clients}): with delta >= 1/n a mechanism may release "
              "one client's data outright and still meet it")
    if not cfg.clip > 0:
        _fail("clip", cfg.clip, "must be positive")
    if not CLIP_RANGE[0] <= cfg.clip <= CLIP_RANGE[1]:
        _fail("clip", cfg.clip, f"must be in [{CLIP_RANGE[0]:g}, {CLIP_RANGE[1]:g}] (norms "
              "outside it overflow or vanish in float32)")
    if cfg.server_accountant is not None and cfg.server_accountant not in SERVER_ACCOUNTANTS:
        _fail("server_accountant", cfg.server_accountant,
              f"must be {_one_of(SERVER_ACCOUNTANTS)} (or unset: the run's accountant)")
    if cfg.sampling == "fixed" and cfg.accountant not in RDP_ACCOUNTANTS:
        _fail("accountant", cfg.accountant,
              f"sampling='fixed' needs accountant={_one_of(RDP_ACCOUNTANTS)}")
    if cfg.personal is not None and check_spec(cfg.personal) is not None:
        _fail("personal", cfg.personal, check_spec(cfg.personal))
    if cfg.data_sampling == "wr" and cfg.local_epochs is not None:
        _fail("data_sampling", cfg.data_sampling, "'wr' draws local_steps x batch_size "
              "examples; it does not go with local_epochs")
    for m in cfg.methods:                        # what each method cannot run with
        for key, value, why in METHODS[m].config_errors(cfg):
            _fail(key, value, why)
    _check_audit(cfg)
    for key in ("rates", "noise_multipliers"):
        v = getattr(cfg, key)
        if v is not None and len(v) != len(cfg.budgets):
            _fail(key, v, f"needs {len(cfg.budgets)} entries, one per group")
    for m in (cfg.reference or {}):
        if m not in cfg.methods:
            _fail("reference", m, f"is not one of the config's methods {cfg.methods}")
    check_name("name", cfg.name)
    for key in PATH_KEYS:
        if getattr(cfg, key) is not None and not str(getattr(cfg, key)).strip():
            _fail(key, getattr(cfg, key), "must name a folder (empty would mean the working "
                  "folder)")
    check_writable_dir("output_dir", cfg.output_dir)
    check_writable_dir("data_root", cfg.data_root)
    return cfg


def _check_key(cfg: ExperimentConfig, key: str) -> None:
    """One key on its own: every element of a list key within its range
    (:data:`LIST_RANGES`), a number within its range (:data:`RANGES`) and at most its limit
    (:data:`LIMITS`: beyond what the code can represent or hold). A key none of them
    names (``method``, the shorthand ``from_mapping`` turns into ``methods``) has none."""
    if key not in LIST_RANGES and key not in RANGES and key not in LIMITS:
        return
    value = getattr(cfg, key)
    if key in LIST_RANGES and value is not None:
        rng = LIST_RANGES[key]
        if not all(rng.holds(x) for x in value):
            _fail(key, value, f"every element {rng.rule()}")
    if key in RANGES:
        check_range(key, value, RANGES[key])
    top = LIMITS.get(key)
    if top is not None and value is not None and value > top:
        _fail(key, value, f"must be at most {top:,}")


def check_values(values: dict) -> None:
    """Every key of ``values`` known, of its type, finite and within its range and limit
    (one-line ConfigError naming the key), without the cross-key rules of :func:`validate`:
    for a table's [base] and [datasets.X] blocks and axis values, before the scale does
    arithmetic on them (``rounds = "40"`` was a TypeError there; ``rounds = inf`` or
    ``expected_rate = -1`` were silently replaced by the smoke scale's own values)."""
    cfg = from_mapping(values)
    _check_finite(cfg)
    for key in values:
        _check_key(cfg, key)


def from_mapping(values: dict, base: Optional[ExperimentConfig] = None) -> ExperimentConfig:
    cfg = dataclasses.replace(base) if base is not None else ExperimentConfig()
    for key, value in values.items():
        if key == "method":          # single-method shorthand
            key, value = "methods", [value] if isinstance(value, str) else value
        if key not in KEYS:
            _unknown_key(key, value)
        setattr(cfg, key, _coerce(key, value))
    return cfg


def _unknown_key(key: str, value) -> None:
    _fail(key, value, "unknown key" + did_you_mean(key, KEYS) +
          " (python -m tff_idp.run --help lists every key)")


# a config nested deeper than Python's recursion limit lets tomllib read (about 490 levels)
TOO_DEEP = "nested too deeply to read (no config key takes more than a list of lists)"


def check_config_path(path: str) -> None:
    """One-line ConfigError unless ``path`` is a regular file (a FIFO would block the read,
    a directory cannot be read)."""
    p = Path(path)
    if p.is_dir():
        _fail("config", str(path), "is a directory, not a config file")
    if p.exists() and not p.is_file():
        _fail("config", str(path), "is not a regular file")
    if not p.is_file():
        _fail("config", str(path), "no such file")


def read_toml(path: str) -> dict:
    """A config file's TOML, or a one-line ConfigError (missing file, malformed TOML)."""
    check_config_path(path)
    p = Path(path)
    try:
        return tomllib.loads(p.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        _fail("config", str(path), f"malformed TOML ({str(e).splitlines()[0]})")
    except RecursionError:             # tomllib reads nested arrays and tables recursively
        _fail("config", str(path), TOO_DEEP)


def _quoted_example(key: str, raw: str) -> str:
    """``--set 'key=["a", "b"]'`` from a list of bare words ``[a, b]`` (the shell ate the
    quotes), for the error of an unparsable --set value."""
    import re
    inner = re.sub(r"(?<![\w\"'.])([A-Za-z_][\w\-:]*)", r'"\1"', raw.strip().strip("'"))
    return f"--set '{key}={inner}'"


def load(path: Optional[str], overrides: Optional[List[str]] = None) -> ExperimentConfig:
    """Load a TOML config (or the embedded default when ``path`` is None), apply
    ``key=value`` overrides (values in TOML syntax; bare words are strings), validate."""
    values = read_toml(path) if path is not None else {}
    if path is not None and "name" not in values:    # results of two files do not collide
        values = dict(values, name=Path(path).stem)
    cfg = from_mapping(values)
    for item in overrides or []:
        cfg = from_mapping(dict([parse_override(item)]), cfg)
    return validate(cfg)


def parse_override(item: str):
    """(key, value) of one ``--set key=value`` (the value in TOML syntax; a bare word is a
    string); a one-line ConfigError for what cannot be one."""
    if "=" not in item:
        _fail("--set", item, "expected key=value")
    key, raw = item.split("=", 1)
    key = key.strip()
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except RecursionError:
        _fail("--set", item, TOO_DEEP)
    except tomllib.TOMLDecodeError:
        if raw.strip()[:1] in ("[", "{", '"', "'"):      # meant as a list, table or string
            _fail("--set", item, "not a TOML value; quote the strings inside it and the "
                  "whole argument for the shell, e.g. " + _quoted_example(key, raw))
        value = raw.strip()
    if key not in KEYS and key != "method":
        _unknown_key(key, value)
    return key, value
