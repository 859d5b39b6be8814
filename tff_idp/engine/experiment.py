"""Everything a run needs before any training: data, clients, groups, method plans, and the
privacy ledger's check of every plan (``tff_idp.planning``). No TensorFlow is imported here,
so a config that would overspend a budget is refused in well under a second."""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Dict, List, Optional

import numpy as np

from ..algorithms.plan import MethodPlan, PrivacySetting
from ..config import INPUT_NORMALIZATIONS, ConfigError
from ..experiment_config import ExperimentConfig
from ..data import (ArrayData, DataStore, DataUnavailableError, classes_per_client,
                    dealt_classes, dirichlet_label_skew, dirichlet_per_client, iid_partition,
                    label_shards, load, pachinko, validation_split)
from ..planning import new_ledger, plan_all
from ..privacy import PrivacyLedger
from .memory import check_canaries_fit, check_fits


@dataclasses.dataclass
class Experiment:
    cfg: ExperimentConfig
    data: ArrayData
    client_indices: List[np.ndarray]     # training-example ids per client
    client_groups: np.ndarray            # privacy group per client
    setting: PrivacySetting
    plans: Dict[str, MethodPlan]
    # stores a newly built partition (prepare(persist=False): after every check has passed)
    save_partition: Optional[Callable[[], object]] = None
    # held-out validation ids per client (``validation_fraction`` > 0), else None
    client_validation: Optional[List[np.ndarray]] = None

    @property
    def group_members(self) -> List[np.ndarray]:
        return [np.flatnonzero(self.client_groups == g) for g in range(len(self.cfg.budgets))]

    def new_ledger(self, plan: MethodPlan) -> PrivacyLedger:
        return new_ledger(self.cfg, self.client_groups, self.setting, plan)


PARTITION_VERSION = 1   # bump when a partitioner changes: stored partitions are keyed by it


def partition_clients(cfg: ExperimentConfig, data: ArrayData) -> List[np.ndarray]:
    """Training-example ids per client, by ``cfg.partition`` (tff_idp.data.partition), built
    once per (data set, partition, parameter, clients, seed) in the data store."""
    parts, save = pending_partition(cfg, data)
    if save is not None:
        save()
    return parts


def pending_partition(cfg: ExperimentConfig, data: ArrayData, store: bool = True):
    """:func:`partition_clients` without the write: (ids, save), ``save`` storing a newly
    built partition (None when it is stored already or the data set has its own clients).
    ``store=False``: built, never read from or written to the data store (your own data)."""
    n, y = cfg.num_clients, data.y_train
    if cfg.partition == "natural":
        own = data.clients
        if n > len(own):
            raise ConfigError(f"num_clients={n}: {cfg.dataset} has {len(own)} clients")
        if n == len(own):
            parts = list(own)
        else:
            chosen = np.sort(np.random.default_rng(cfg.seed).choice(len(own), n,
                                                                    replace=False))
            parts = [own[i] for i in chosen]
        return parts, None

    if cfg.partition in ("classes", "dealt_classes"):
        classes = len(np.unique(y))
        if cfg.partition_param > classes:
            raise ConfigError(f"partition_param={cfg.partition_param!r}: more classes per "
                              f"client than the {classes} classes of {cfg.dataset}")

    def build():
        if cfg.partition == "iid":
            return iid_partition(len(y), n, cfg.seed)
        if cfg.partition == "dirichlet":
            return dirichlet_label_skew(y, n, cfg.partition_param, cfg.seed)
        if cfg.partition == "dirichlet_per_client":
            return dirichlet_per_client(y, n, cfg.partition_param, cfg.seed)
        if cfg.partition == "classes":
            return classes_per_client(y, n, int(cfg.partition_param), cfg.seed)
        if cfg.partition == "dealt_classes":
            return dealt_classes(y, n, int(cfg.partition_param), cfg.seed)
        if cfg.partition == "shards":
            return label_shards(y, n, int(cfg.partition_param or 1), cfg.seed)
        return pachinko(y, n, len(y) // n, cfg.seed, alpha=cfg.partition_param or 0.1)

    if not store:
        return build(), None
    key = dict(partition=cfg.partition, param=cfg.partition_param, clients=n, seed=cfg.seed,
               examples=len(y), v=PARTITION_VERSION)
    try:
        return DataStore(cfg.data_root).pending_partition(cfg.dataset, key, build, len(y))
    except ValueError as e:
        raise ConfigError(f"partition={cfg.partition!r}: {e}") from e


def subsample_test(data: ArrayData, count, seed: int) -> ArrayData:
    """A seeded random subset of ``count`` test examples (all when ``count`` is None or
    not smaller than the test set)."""
    if count is None or count >= len(data.y_test):
        return data
    idx = np.sort(np.random.default_rng([seed, 1]).choice(len(data.y_test), count,
                                                          replace=False))
    return dataclasses.replace(data, x_test=data.x_test[idx], y_test=data.y_test[idx])


def normalized(data: ArrayData, how: str) -> ArrayData:
    """``"unit"``: as loaded (images in [0, 1]); ``"standardize"``: images minus the training
    set's per-channel mean, over its per-channel std, the same statistics applied to the test
    set (the usual (x - mean) / std input transform; for Fashion-MNIST mean 0.286, std 0.353).
    Only float image data (rank >= 3 per example) are transformed: text and tabular inputs
    are refused, since the key would be silently ignored there."""
    if how == "unit":
        return data
    if how not in INPUT_NORMALIZATIONS:
        raise ValueError(f"input_normalization={how!r} is not one of {INPUT_NORMALIZATIONS}")
    if data.x_train.ndim < 4 or data.x_train.dtype.kind != "f":
        raise ConfigError(f"input_normalization={how!r}: for image data sets only "
                          f"({data.name} is not one)")
    axes = tuple(range(data.x_train.ndim - 1))
    mean = data.x_train.mean(axis=axes, dtype=np.float64).astype(np.float32)
    std = data.x_train.std(axis=axes, dtype=np.float64).astype(np.float32)
    std = np.where(std > 0, std, 1.0).astype(np.float32)
    return dataclasses.replace(data, x_train=(data.x_train - mean) / std,
                               x_test=(data.x_test - mean) / std)


@functools.lru_cache(maxsize=2)
def _load(name, seed, data_dir, allow_download, root) -> ArrayData:
    """Data sets are immutable once loaded: a table's runs on one data set (same seed) load
    it once per process."""
    return load(name, seed, data_dir, allow_download, root)


def prepare(cfg: ExperimentConfig, persist: bool = True,
            data: Optional[ArrayData] = None) -> Experiment:
    """Load data, plan every method and check every plan against the budgets, partition.
    ``persist=False``: a newly built partition is stored only when the caller runs
    ``exp.save_partition()`` (after its own checks: a refused config writes nothing).
    ``data``: your own (``tff_idp.data.own``; ``cfg.dataset`` its name) instead of loading
    ``cfg.dataset``; its partition is built every time, never stored."""
    own = data is not None
    if not own:
        try:
            data = _load(cfg.dataset, cfg.seed, cfg.data_dir, cfg.allow_download,
                         cfg.data_root)
        except DataUnavailableError as e:
            raise ConfigError(str(e)) from e
    data = subsample_test(normalized(data, cfg.input_normalization), cfg.test_examples, cfg.seed)
    if cfg.num_clients > len(data.y_train):
        raise ConfigError(f"num_clients={cfg.num_clients}: more than the {len(data.y_train)} "
                          f"training examples of {cfg.dataset}")
    groups, setting, plans = plan_all(cfg)     # every refusal before the first write
    rates = [q for p in plans.values() for q in p.rates]
    check_fits(cfg, data, rates)
    if cfg.audit_canaries:             # the canaries' signs and updates scale with the model
        check_canaries_fit(cfg, model_parameters(cfg, data),
                           max(p.rates[cfg.audit_group] for p in plans.values()))
    indices, save = pending_partition(cfg, data, store=not own)
    validation = None
    if cfg.validation_fraction > 0:
        indices, validation = validation_split(indices, cfg.validation_fraction, cfg.seed)
    if persist and save is not None:
        save()
        save = None
    return Experiment(cfg, data, indices, groups, setting, plans, save, validation)


def model_builder(cfg: ExperimentConfig, data) -> Callable:
    """A function building the config's Keras model for ``data``'s inputs and classes (the
    round loop's ``build_model_fn`` adds a method's own parts on top)."""
    from .. import models
    shape = tuple(data.x_train.shape[1:])

    def build():
        return models.build(cfg.model, input_dim=int(np.prod(shape)), input_shape=shape,
                            num_classes=data.num_classes, vocab_size=data.num_classes,
                            seq_len=shape[0], sequence_targets=data.y_train.ndim > 1)
    return build


def model_parameters(cfg: ExperimentConfig, data) -> int:
    """The config's model's parameter count (builds it once: seconds for a ResNet)."""
    return int(model_builder(cfg, data)().count_params())
