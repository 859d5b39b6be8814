"""Shared by the engine tests: keep a run's backend runner and personal store."""
from tff_idp.engine import loop


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
