"""A run's fingerprint: what a checkpoint or a finished results folder must match to be
resumed or taken as this run (``persist``, ``finished_runs``, ``harness.reuse``)."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import zlib

from ..config import PLACEMENT_KEYS
from ..data.client_dataset import DATA_ORDER_VERSION
from ..methods import METHODS

# what a round releases; part of every run fingerprint. 1: an empty group or cohort released
# nothing (sessions 1-16); 2: it releases its noise (GroupGaussianFactory, empty rounds)
RELEASE_VERSION = 2


def method_key(method: str) -> int:
    """A stable number per method name: its random streams do not depend on where it sits
    in the config's method list."""
    return zlib.crc32(method.encode())


def plan_version(cfg, method: str) -> int:
    """The method's plan version (``Method.plan_version``): results and checkpoints made
    with an older plan count as stale."""
    return METHODS[method].plan_version(cfg)


def run_fingerprint(cfg, method: str) -> str:
    """What a checkpoint (or a finished results folder, for the harness) must match: every
    config key that changes the computation (not where results or data are, whether data may
    be downloaded, how often to checkpoint, or the device and chunk size)."""
    keys = dataclasses.asdict(cfg)
    for k in PLACEMENT_KEYS + ("reference", "name", "methods"):
        keys.pop(k, None)
    # keys at their default value are left out, so that a key added to the config later
    # (with a default that keeps the old behaviour) does not orphan earlier results
    defaults = dataclasses.asdict(type(cfg)())
    keys = {k: v for k, v in keys.items() if v != defaults.get(k)}
    # ... and so are keys spelled out at the value the method reads them as when unset
    for k, v in METHODS[method].implied_config(cfg).items():
        if keys.get(k) == v:
            del keys[k]
    version = plan_version(cfg, method)
    if version:
        keys["plan_version"] = version
    return hashlib.sha256(json.dumps([method, keys, DATA_ORDER_VERSION, RELEASE_VERSION],
                                     sort_keys=True,
                                     default=str).encode()).hexdigest()[:16]
