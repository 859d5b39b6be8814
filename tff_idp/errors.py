"""The errors an entry point reports in one line (exit status 2). Nothing heavy is imported
here, so ``python -m tff_idp.run`` can name them in an ``except`` from its first instruction:
a Ctrl-C during start-up then ends in one line, never in a traceback."""


class ConfigError(ValueError):
    """A bad configuration value; the message is one line naming the key and the value."""


class UnsupportedByBackend(ValueError):
    """The method or setting is not implemented by this backend (never a silent fallback)."""


class RunDiverged(RuntimeError):
    """The model's weights stopped being finite numbers (a step size or an update that
    overflows float32): the run stops at that round, in one line naming the keys that set
    the step, and keeps nothing of it (exit status 1)."""


class RoundInterrupted(Exception):
    """A stop request reached a round between two chunks of clients: the round is dropped
    (nothing of it was applied) and the run stops at the checkpoint of the round before."""


SHOWN_CHARS = 120     # a value shown in an error line is cut to this many characters


def shown(value) -> str:
    """``repr(value)`` for a one-line error message: at most SHOWN_CHARS characters (a list
    of a million numbers, or one nested 3,000 deep whose repr alone overflows Python's
    recursion limit, is shown by its start and its size)."""
    try:
        text = repr(value)
    except RecursionError:
        text = f"<{type(value).__name__} nested too deeply to show>"
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:SHOWN_CHARS - 30]}... ({len(text):,} characters)"


def fail(key, value, why) -> None:
    """Raises the one-line ConfigError ``key=<value>: why`` (the value shown bounded)."""
    raise ConfigError(f"{key}={shown(value)}: {why}")


def did_you_mean(word: str, choices) -> str:
    """"; did you mean 'x'?" for ``word`` spelled as a registry writes it (lower case, '_'
    for '-' and ' ', '_plus' for '+': gdpfed+ -> gdpfed_plus), or for a choice that holds
    all its letters in order (fmnist -> fashion_mnist), or the closest by difflib's ratio;
    "" when none is near."""
    import difflib
    choices = sorted(choices)
    norm = str(word).lower().replace("+", "_plus").replace("-", "_").replace(" ", "_")
    if norm in choices and norm != word:
        close = [norm]
    else:
        def holds(choice):                     # every letter of word, in order
            it = iter(choice)
            return all(ch in it for ch in norm.replace("_", ""))
        close = [c for c in choices if len(norm) >= 3 and holds(c) and c != word][:2] or \
            difflib.get_close_matches(norm, choices, n=2, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?"
