"""The config keys as a page: ``python -m tff_idp.run --help``'s key list and docs/config.md,
generated from :class:`tff_idp.config.ExperimentConfig` (each field's comment) and the
rules :func:`tff_idp.config.validate` applies (choices, ranges, limits, list elements)."""
from __future__ import annotations

import dataclasses
import re
from typing import List

from .config import CHOICES, LIMITS, LIST_RANGES, RANGES, ExperimentConfig


def key_docs() -> List[dict]:
    """Every key of :class:`ExperimentConfig` with its default and its one-line doc (the
    comment beside or above its field), its choices and its range where declared: what
    ``--help`` lists and docs/config.md is generated from (:func:`config_markdown`)."""
    import inspect
    src = inspect.getsource(ExperimentConfig)
    out = []
    for f in dataclasses.fields(ExperimentConfig):
        m = re.search(rf"^\s+{f.name}:.*?#\s*(.*)$", src, re.M)
        above = re.search(rf"((?:^\s+#.*\n)+)\s+{f.name}:", src, re.M)
        doc = m.group(1) if m else (" ".join(l.strip().lstrip("# ").strip() for l in
                                              above.group(1).splitlines()) if above else "")
        if f.name == "methods":         # the registry's names, plug-ins included
            from .methods import METHODS
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
             "from `tff_idp/config.py` (by `tff_idp/config_doc.py`) with `python scripts/config_doc.py`; "
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
