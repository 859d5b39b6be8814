"""The errors an entry point reports in one line (exit status 2). Nothing heavy is imported
here, so ``python -m tff_idp.run`` can name them in an ``except`` from its first instruction:
a Ctrl-C during start-up then ends in one line, never in a traceback."""


class ConfigError(ValueError):
    """A bad configuration value; the message is one line naming the key and the value."""


class UnsupportedByBackend(ValueError):
    """The method or setting is not implemented by this backend (never a silent fallback)."""


class RoundInterrupted(Exception):
    """A stop request reached a round between two chunks of clients: the round is dropped
    (nothing of it was applied) and the run stops at the checkpoint of the round before."""
