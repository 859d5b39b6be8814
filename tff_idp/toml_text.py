"""TOML text to a dict, as every reader of configs, tables and the status rows does it.

tomllib reads nested arrays and tables recursively: a file nested a few hundred levels deep
ends its parse in RecursionError, which each reader turns into one line ("nested too
deeply"). While the parse is that deep, a garbage collection that starts runs other
libraries' callbacks at the recursion limit too (jax's, once TFF is imported), and they
fail there and print a traceback beside the one-line error ("Exception ignored in ...").
:func:`loads` holds collection off for the parse, so nothing but the parse runs that deep."""
from __future__ import annotations

import gc
import tomllib

# what every reader says of a file or value nested deeper than the parse can go (about 490
# levels at Python's default recursion limit)
TOO_DEEP = "nested too deeply to read (no config key takes more than a list of lists)"


def loads(text: str) -> dict:
    """``tomllib.loads(text)`` with garbage collection held off while it runs (restored as
    it was). TOMLDecodeError and RecursionError pass to the caller."""
    held = gc.isenabled()
    gc.disable()
    try:
        return tomllib.loads(text)
    finally:
        if held:
            gc.enable()
