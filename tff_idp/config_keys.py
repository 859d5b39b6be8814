"""A config key as the module that acts on it declares it: a method's own keys are declared in
the method's module (``Method.config_keys``) and reach the experiment config through the
method registry (``tff_idp.experiment_config``), so that ``tff_idp.config`` names no method.

No TensorFlow, nothing of the package but the range type: declaring a key loads no model.
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Tuple

from .key_ranges import Range


@dataclasses.dataclass(frozen=True)
class ConfigKey:
    """One flat TOML key: ``name``, its ``type`` as the config's dataclass annotates it
    (``"int"``, ``"float"``, ``"str"``, ``"bool"``, ``"Optional[float]"``, ...), its
    ``default``, a one-line ``doc`` (``--help`` and docs/config.md print it), and the rules
    ``validate`` applies to it: ``choices`` (one of these values), ``range`` (a number's),
    ``limit`` (the largest value the code can represent or hold) and ``note`` (what the
    reader of a choice key's error line needs besides its values)."""
    name: str
    type: str
    default: object
    doc: str
    choices: Optional[Tuple] = None
    range: Optional[Range] = None
    limit: Optional[int] = None
    note: Optional[str] = None

    def field(self) -> tuple:
        """(name, type, dataclasses.field) for ``dataclasses.make_dataclass``."""
        return self.name, self.type, dataclasses.field(default=self.default)


def merged(declarations) -> dict:
    """{name: ConfigKey} of ``declarations`` ((owner, keys) pairs, in order): a key two
    owners declare must be the same declaration (ValueError naming both otherwise)."""
    out, owners = {}, {}
    for owner, keys in declarations:
        for key in keys:
            if key.name in out and out[key.name] != key:
                raise ValueError(f"config key {key.name!r}: declared differently by "
                                 f"{owners[key.name]} and {owner}")
            out.setdefault(key.name, key)
            owners.setdefault(key.name, owner)
    return out
