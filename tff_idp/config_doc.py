"""The config keys as a page: ``python -m tff_idp.run --help``'s key list and docs/config.md,
generated from :class:`tff_idp.config.CoreConfig` (each field's comment), the keys each
method owns (``Method.config_keys``: each one's ``doc``) and the rules the config's
``validate`` applies (choices, ranges, limits, list elements)."""
from __future__ import annotations

import dataclasses
import re
from typing import List

from .config import LIST_RANGES, CoreConfig
from .experiment_config import CHOICES, LIMITS, RANGES, ExperimentConfig
from .methods.registry import CONFIG_KEYS, METHODS


def _core_docs() -> dict:
    """{key: its one-line doc} of the core keys: the comment beside or above its field."""
    import inspect
    src = inspect.getsource(CoreConfig)
    out = {}
    for f in dataclasses.fields(CoreConfig):
        m = re.search(rf"^\s+{f.name}:.*?#\s*(.*)$", src, re.M)
        above = re.search(rf"((?:^\s+#.*\n)+)\s+{f.name}:", src, re.M)
        out[f.name] = m.group(1) if m else (" ".join(
            line.strip().lstrip("# ").strip() for line in above.group(1).splitlines())
            if above else "")
    return out


def key_docs() -> List[dict]:
    """Every key of the experiment config (the core's, then the methods' own) with its
    default and its one-line doc, its choices and its range where declared: what ``--help``
    lists and docs/config.md is generated from (:func:`config_markdown`)."""
    docs = {**_core_docs(), **{name: key.doc for name, key in CONFIG_KEYS.items()}}
    out = []
    for f in dataclasses.fields(ExperimentConfig):
        doc = docs[f.name]
        if f.name == "methods":         # the registry's names, plug-ins included
            doc += " " + " ".join(METHODS)
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        if isinstance(default, list):
            default = [round(v, 4) if isinstance(v, float) else v for v in default]
        # a default computed where the config is made (an environment variable): said so
        computed = f.default is dataclasses.MISSING and not isinstance(default, (list, dict))
        out.append({"name": f.name, "default": default, "doc": doc, "computed": computed,
                    "choices": CHOICES.get(f.name), "range": RANGES.get(f.name),
                    "limit": LIMITS.get(f.name), "elements": LIST_RANGES.get(f.name)})
    return out


def config_markdown() -> str:
    """docs/config.md: every config key, generated from the code (``python
    scripts/config_doc.py`` writes it; a test fails when the page differs)."""
    lines = ["# Config keys", "",
             "Every key of an experiment config (TOML; `--set key=value` overrides one, in "
             "TOML syntax; `tff_idp.Experiment.from_dict` takes the same keys). Generated "
             "from `tff_idp/config.py` (the core keys) and each method's `config_keys` (its own) "
             "(by `tff_idp/config_doc.py`) with `python scripts/config_doc.py`; "
             "`tests/test_config_doc.py` fails when this page differs. A table config "
             "(`[table]`, docs/tables.md) sets these keys per cell. Bad values are refused "
             "in one line naming the key, exit status 2, before any work.", "",
             "| key | default | what it is | allowed |", "|---|---|---|---|"]
    for k in key_docs():
        allowed = []
        if k["choices"]:
            allowed.append("one of " + ", ".join(f"`{c}`" for c in k["choices"]))
        if k["range"] is not None:
            allowed.append(k["range"].rule())
        if k["limit"] is not None:
            allowed.append(f"at most {k['limit']:,}")
        if k["elements"] is not None:
            allowed.append("every element " + k["elements"].rule())
        doc = k["doc"].replace("|", "\\|")
        default = "computed (see its doc)" if k["computed"] else f"`{k['default']!r}`"
        lines.append(f"| `{k['name']}` | {default} | {doc} | "
                     f"{'; '.join(allowed) or '-'} |")
    return "\n".join(lines) + "\n"
