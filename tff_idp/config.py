"""Experiment specification: a dataclass, loaded from TOML, overridden by ``--set``, validated.

Every check raises :class:`ConfigError` with one line naming the key and the value; the CLI
turns it into exit status 2 before any work starts.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
import tomllib
from pathlib import Path
from typing import Dict, List, Mapping, Optional

from .algorithms.plan import GROUP_WEIGHTINGS
from .audit.bounds import MAX_CANARIES
from .data import FEDERATED, SOURCES
from .data.partition import PARTITIONS
from .data.sources import default_tfds_dir
from . import toml_text
from .atomic import check_writable_dir
from .errors import ConfigError, did_you_mean  # noqa: F401 (importers take ConfigError here)
from .errors import fail as _fail
from .key_ranges import (AT_LEAST_ONE, LEARNING_RATE, NON_NEGATIVE, POSITIVE,
                         PROBABILITY_OPEN, Range)
from .key_ranges import check as check_range
from .models.split import check_spec
from .privacy.accounting import ACCOUNTANTS, RDP_ACCOUNTANTS, SERVER_ACCOUNTANTS
from .privacy.mspafl import DATA_SAMPLINGS
from .privacy.threat_model import NOISE_DRAWS
from .runtime import DEVICES
from .sampling import SAMPLINGS


@dataclasses.dataclass
class CoreConfig:
    """The core keys of an experiment config (TOML), those the engine reads whatever the
    method; each method's own keys join them in :class:`Schema` (its ``config_keys``:
    ``tff_idp.experiment_config.ExperimentConfig``). Defaults are the embedded offline
    default."""
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
    # "sgd" (momentum), "adam" (Kingma & Ba Alg. 1) or "adam_keras" (their Sec. 2 form, as
    # Keras and TFF step it: paper 004's code); the two Adams differ on gradients below ~1e-5
    client_optimizer: str = "sgd"
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
    # client-side noise: each client draws its share ("client", Alg. 1 line 13 as written) or
    # the server draws each group sum's noise once ("group": same distribution, far cheaper)
    noise_draw: str = "client"
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
    weight_decay: float = 0.0                 # client SGD: g + weight_decay * theta (PyTorch)
    # fraction of each client's training examples held out for validation; > 0 makes the
    # summary report the test accuracy at the round of best mean validation accuracy
    validation_fraction: float = 0.0
    data_sampling: str = "wor"                # a round's Qb examples: "wor" or "wr" (eq. 9)
    backend: str = "tff"                      # "tff" (reference) or "fast" (batched TF, GPU)
    device: str = "auto"                      # "auto", "cpu" or "gpu" (fast backend's device)
    fast_chunk_size: int = 64                 # clients the fast backend trains at once (memory)
    # independent sub-cohorts a chunk trains in, run at once by TF's inter-op threads (a
    # CPU: one per core, with TF_NUM_INTRAOP_THREADS=1, evaluating as many batches at once;
    # a GPU: 1); docs/backends.md
    fast_lanes: int = 1
    # the fast backend's Dense kernels under SGD: "auto" (a low-rank update where exact and
    # cheaper), "low_rank" (wherever exact) or "per_client" (a matrix per client); the same
    # arithmetic in another summation order (tff_idp.engine.low_rank, docs/backends.md)
    fast_dense_updates: str = "auto"
    # the fast backend's client noise shares: "each" drawn from its client's seed, or
    # "summed": one draw per group of the sum of the shares that only the group sums
    # carry (PFA's public rows keep their own; the same distribution, another random
    # stream; docs/backends.md)
    fast_noise_shares: str = "each"
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
                  "fast_dense_updates", "data_dir", "data_root", "allow_download")


def _coerce(field: dataclasses.Field, value):
    """Type-check one value against its dataclass field."""
    key, typ = field.name, field.type
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


def _check_finite(cfg: CoreConfig) -> None:
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
# the key. Five sets are held here because the modules that act on them import TensorFlow,
# which a config check must not load: backend (engine.backends.BACKENDS), client_optimizer
# (algorithms.client_optimizer.OPTIMIZERS), input_normalization (engine.experiment.normalized,
# which reads this set), fast_dense_updates (engine.low_rank.DENSE_UPDATES),
# fast_noise_shares (engine.backends.NOISE_SHARES); tests/test_config_choices.py checks
# that those modules accept exactly these.
BACKEND_NAMES = ("tff", "fast")
CLIENT_OPTIMIZERS = ("sgd", "adam", "adam_keras")
INPUT_NORMALIZATIONS = ("unit", "standardize")
DENSE_UPDATES = ("auto", "low_rank", "per_client")
NOISE_SHARES = ("each", "summed")
CHOICES = {
    "partition": PARTITIONS,
    "input_normalization": INPUT_NORMALIZATIONS,
    "fast_dense_updates": DENSE_UPDATES,
    "fast_noise_shares": NOISE_SHARES,
    "client_optimizer": CLIENT_OPTIMIZERS,
    "sampling": SAMPLINGS,
    "accountant": ACCOUNTANTS,
    "group_weighting": GROUP_WEIGHTINGS,
    "noise_draw": NOISE_DRAWS,
    "backend": BACKEND_NAMES,
    "device": DEVICES,
    "data_sampling": DATA_SAMPLINGS,
}
# numeric keys' ranges: the core's here, each method's keys' in its ``config_keys``
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
}


def _one_of(names) -> str:
    """"'a', 'b' or 'c'": the allowed values of a key, for its error line."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _check_audit(cfg: CoreConfig, methods) -> None:
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
        if methods[m].split_spec(cfg) != "none":
            _fail("audit_canaries", cfg.audit_canaries, f"method {m!r} keeps a personal "
                  "part; canaries audit methods whose whole update is shared")


# largest values the code represents: seeds seed numpy's and TensorFlow's 32-bit streams;
# a ledger and metrics row per round; the rest keep a round's plan within reach of memory
# (the memory estimate, engine.memory, refuses what still cannot fit); every integer key has
# one (audit_canaries its own rule in _check_audit: tests/faults/test_config_matrix.py)
LIMITS = {"seed": 2 ** 32 - 1, "rounds": 1_000_000, "num_clients": 10_000_000,
          "local_steps": 1_000_000, "batch_size": 1_000_000, "local_epochs": 10_000,
          "fast_chunk_size": 100_000,
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


def _check_core_rules(cfg: CoreConfig, data=None) -> None:
    """The rules between core keys: methods listed once, the data set, model and partition,
    budgets and group ratios, delta, clip, accountants, the personal split, data sampling.
    ``data``: your own ArrayData (``tff_idp.api``), in place of a registered source."""
    from .models import MODELS
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


def _check_names_and_folders(cfg: CoreConfig) -> None:
    """Per-group lists of the groups' length, reference values of the config's methods, a
    folder name, path keys that name folders one can write."""
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


@dataclasses.dataclass(frozen=True)
class Schema:
    """The experiment config's keys and rules: the core's (this module) and those the
    registered methods own (``Method.config_keys``), with the methods themselves for the
    rules that name one (``split_spec``, ``config_errors``). Built once, above the methods,
    by ``tff_idp.experiment_config`` (:meth:`of`), whose ``ExperimentConfig``,
    ``from_mapping``, ``validate`` and ``load`` are this schema's: this module names no
    method."""
    config_class: type
    choices: Dict[str, tuple]
    ranges: Dict[str, Range]
    limits: Dict[str, int]
    notes: Dict[str, str]
    methods: Mapping            # name -> Method (tff_idp.methods.METHODS)
    broken: Mapping             # name -> why: registered plug-ins that cannot be used

    @classmethod
    def of(cls, method_keys, methods, broken, module: str) -> "Schema":
        """The core keys plus ``method_keys`` ({name: ``ConfigKey``}), as a dataclass
        ``ExperimentConfig`` (a subclass of :class:`CoreConfig`) of ``module``."""
        keys = list(method_keys.values())
        config_class = dataclasses.make_dataclass(
            "ExperimentConfig", [k.field() for k in keys], bases=(CoreConfig,))
        config_class.__module__ = module       # pickled by name (the harness's workers)
        config_class.__doc__ = ("Keys of an experiment config (TOML): the core's "
                                "(tff_idp.config.CoreConfig) and the registered methods' own.")
        return cls(config_class,
                   {**CHOICES, **{k.name: k.choices for k in keys if k.choices}},
                   {**RANGES, **{k.name: k.range for k in keys if k.range}},
                   {**LIMITS, **{k.name: k.limit for k in keys if k.limit}},
                   {k.name: k.note for k in keys if k.note}, methods, broken)

    @functools.cached_property
    def keys(self) -> Dict[str, dataclasses.Field]:
        """Every key (its dataclass field), core first."""
        return {f.name: f for f in dataclasses.fields(self.config_class)}

    def validate(self, cfg, data=None):
        """``cfg`` checked key by key (one-line ConfigError). ``data``: the ArrayData of your own
        that ``cfg`` will run on (``tff_idp.api``): ``dataset`` is then its name, not a
        registered source, and ``partition = "natural"`` needs its clients."""
        _check_finite(cfg)
        for key, allowed in self.choices.items():
            if getattr(cfg, key) not in allowed:
                note = f" ({self.notes[key]})" if key in self.notes else ""
                _fail(key, getattr(cfg, key), f"must be {_one_of(allowed)}{note}")
        for key in dict.fromkeys([*self.ranges, *self.limits, *LIST_RANGES]):
            self._check_key(cfg, key)
        methods = self.methods
        for m in cfg.methods:
            if m not in methods and m in self.broken:      # registered by a package, unusable
                _fail("methods", m, self.broken[m])
            if m not in methods:
                _fail("methods", m, f"unknown method{did_you_mean(m, methods)} (choose from "
                      f"{', '.join(sorted(methods))})")
        _check_core_rules(cfg, data)
        for m in cfg.methods:                        # what each method cannot run with
            for key, value, why in methods[m].config_errors(cfg):
                _fail(key, value, why)
        _check_audit(cfg, methods)
        _check_names_and_folders(cfg)
        return cfg

    def _check_key(self, cfg, key: str) -> None:
        """One key on its own: every element of a list key within its range
        (:data:`LIST_RANGES`), a number within its range (``ranges``) and at most its limit
        (``limits``: beyond what the code can represent or hold). A key none of them
        names (``method``, the shorthand ``from_mapping`` turns into ``methods``) has none."""
        if key not in LIST_RANGES and key not in self.ranges and key not in self.limits:
            return
        value = getattr(cfg, key)
        if key in LIST_RANGES and value is not None:
            rng = LIST_RANGES[key]
            if not all(rng.holds(x) for x in value):
                _fail(key, value, f"every element {rng.rule()}")
        if key in self.ranges:
            check_range(key, value, self.ranges[key])
        top = self.limits.get(key)
        if top is not None and value is not None and value > top:
            _fail(key, value, f"must be at most {top:,}")

    def check_values(self, values: dict) -> None:
        """Every key of ``values`` known, of its type, finite and within its range and limit
        (one-line ConfigError naming the key), without the cross-key rules of :func:`validate`:
        for a table's [base] and [datasets.X] blocks and axis values, before the scale does
        arithmetic on them (``rounds = "40"`` was a TypeError there; ``rounds = inf`` or
        ``expected_rate = -1`` were silently replaced by the smoke scale's own values)."""
        cfg = self.from_mapping(values)
        _check_finite(cfg)
        for key in values:
            self._check_key(cfg, key)

    def from_mapping(self, values: dict, base=None):
        """A config of ``values`` (TOML's flat keys; ``method`` the one-method shorthand) over
        ``base`` (default: every key's default), each value type-checked; not yet validated."""
        cfg = dataclasses.replace(base) if base is not None else self.config_class()
        keys = self.keys
        for key, value in values.items():
            if key == "method":          # single-method shorthand
                key, value = "methods", [value] if isinstance(value, str) else value
            if key not in keys:
                self._unknown_key(key, value)
            setattr(cfg, key, _coerce(keys[key], value))
        return cfg

    def _unknown_key(self, key: str, value) -> None:
        _fail(key, value, "unknown key" + did_you_mean(key, self.keys) +
              " (python -m tff_idp.run --help lists every key)")

    def load(self, path: Optional[str], overrides: Optional[List[str]] = None):
        """Load a TOML config (or the embedded default when ``path`` is None), apply
        ``key=value`` overrides (values in TOML syntax; bare words are strings), validate."""
        values = read_toml(path) if path is not None else {}
        if path is not None and "name" not in values:    # results of two files do not collide
            values = dict(values, name=Path(path).stem)
        cfg = self.from_mapping(values)
        for item in overrides or []:
            cfg = self.from_mapping(dict([self.parse_override(item)]), cfg)
        return self.validate(cfg)

    def parse_override(self, item: str):
        """(key, value) of one ``--set key=value`` (the value in TOML syntax; a bare word is a
        string); a one-line ConfigError for what cannot be one."""
        if "=" not in item:
            _fail("--set", item, "expected key=value")
        key, raw = item.split("=", 1)
        key = key.strip()
        try:
            value = toml_text.loads(f"v = {raw}")["v"]
        except RecursionError:
            _fail("--set", item, toml_text.TOO_DEEP)
        except tomllib.TOMLDecodeError:
            if raw.strip()[:1] in ("[", "{", '"', "'"):      # meant as a list, table or string
                _fail("--set", item, "not a TOML value; quote the strings inside it and the "
                      "whole argument for the shell, e.g. " + _quoted_example(key, raw))
            value = raw.strip()
        if key not in self.keys and key != "method":
            self._unknown_key(key, value)
        return key, value




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
        return toml_text.loads(p.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        _fail("config", str(path), f"malformed TOML ({str(e).splitlines()[0]})")
    except RecursionError:             # tomllib reads nested arrays and tables recursively
        _fail("config", str(path), toml_text.TOO_DEEP)


def _quoted_example(key: str, raw: str) -> str:
    """``--set 'key=["a", "b"]'`` from a list of bare words ``[a, b]`` (the shell ate the
    quotes), for the error of an unparsable --set value."""
    import re
    inner = re.sub(r"(?<![\w\"'.])([A-Za-z_][\w\-:]*)", r'"\1"', raw.strip().strip("'"))
    return f"--set '{key}={inner}'"
