"""The experiment config a run reads: the core keys (:class:`tff_idp.config.CoreConfig`) plus
the keys every registered method owns (``Method.config_keys``, plug-ins' included), in one flat
TOML, with the rules of both (:class:`tff_idp.config.Schema`). The one place that joins the
config and the method registry, so that ``tff_idp.config`` names no method.
"""
from __future__ import annotations

from typing import List, Optional

from .config import Schema
from .methods.registry import BROKEN_PLUGINS, CONFIG_KEYS, METHODS

SCHEMA = Schema.of(CONFIG_KEYS, METHODS, BROKEN_PLUGINS, module=__name__)
ExperimentConfig = SCHEMA.config_class
KEYS = SCHEMA.keys                 # every key's dataclass field, core first
CHOICES, RANGES, LIMITS = SCHEMA.choices, SCHEMA.ranges, SCHEMA.limits


def from_mapping(values: dict, base: Optional[ExperimentConfig] = None) -> ExperimentConfig:
    """A config of ``values`` over ``base`` (default: every key's default), each value
    type-checked, not yet validated (:meth:`Schema.from_mapping`)."""
    return SCHEMA.from_mapping(values, base)


def validate(cfg: ExperimentConfig, data=None) -> ExperimentConfig:
    """``cfg`` checked key by key and between keys, the methods' rules included; one-line
    ConfigError (:meth:`Schema.validate`)."""
    return SCHEMA.validate(cfg, data)


def check_values(values: dict) -> None:
    """A table block's keys, each on its own (:meth:`Schema.check_values`)."""
    SCHEMA.check_values(values)


def load(path: Optional[str], overrides: Optional[List[str]] = None) -> ExperimentConfig:
    """A TOML config (None: the embedded default) with ``--set`` overrides, validated
    (:meth:`Schema.load`)."""
    return SCHEMA.load(path, overrides)


def parse_override(item: str):
    """(key, value) of one ``--set key=value`` (:meth:`Schema.parse_override`)."""
    return SCHEMA.parse_override(item)
