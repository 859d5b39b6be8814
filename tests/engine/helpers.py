"""Shared by the engine tests: a small prepared experiment; keep a run's backend runner and
personal store."""
import json

from tff_idp import experiment_config
from tff_idp.engine import loop
from tff_idp.engine.experiment import prepare


def experiment(methods, settings, extra=()):
    """The prepared :class:`~tff_idp.engine.experiment.Experiment` of ``methods`` (a name or
    a list of names) with the embedded default config under ``settings`` and then ``extra``
    (``--set`` strings: a test file's own small setting, and one test's changes to it)."""
    names = [methods] if isinstance(methods, str) else list(methods)
    return prepare(experiment_config.load(None, [f"methods={json.dumps(names)}", *settings, *extra]))


def capture(monkeypatch, backend, seen):
    """Patch the round loop so that the run's runner, its personal store and the store's
    initial rows land in ``seen``."""

    class Runner(loop.BACKENDS[backend]):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            seen["runner"] = self

    class Store(loop.PersonalStore):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            seen["store"] = self
            seen["initial"] = self.snapshot()

    monkeypatch.setitem(loop.BACKENDS, backend, Runner)
    monkeypatch.setattr(loop, "PersonalStore", Store)


def run_captured(exp, method, backend, monkeypatch):
    """One run of ``method`` on ``backend``: (what :func:`capture` kept: runner, store and
    initial rows; ledger; rows; summary)."""
    seen = {}
    capture(monkeypatch, backend, seen)
    rows, summary, ledger = loop.run_method(exp, method, progress=False, backend=backend)
    return seen, ledger, rows, summary
