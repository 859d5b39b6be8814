"""What a run carries from one round to the next, in one object: the backend
(model weights, optimizer and aggregator state), the clients' personal parts, the cohort
sampler's random generator, the privacy ledger, the metrics rows so far and which process
trained them. A checkpoint is its :meth:`RunState.snapshot`
(``tff_idp.engine.checkpoint``); a resumed run :meth:`RunState.restore`\\ s it. Every other
random stream of a run is a function of (seed, round, client), not of history, so this is
all a resumed run needs to end with exactly the metrics of an uninterrupted one.
"""
from __future__ import annotations

import dataclasses
from typing import List, Optional

import numpy as np

from ..privacy.ledger import PrivacyLedger
from .personal_state import PersonalStore, same_shapes
from .segments import SegmentLog


@dataclasses.dataclass
class RunState:
    runner: object                    # the backend: weights, optimizer and aggregator state
    store: PersonalStore              # every client's personal part
    rng: np.random.Generator          # the cohort sampler's
    ledger: PrivacyLedger
    rows: List[dict] = dataclasses.field(default_factory=list)    # metrics.csv so far
    segments: Optional[SegmentLog] = None    # which process and machine trained which rows

    @property
    def rounds_done(self) -> int:
        return len(self.rows)

    def snapshot(self, rng_state: Optional[dict] = None) -> dict:
        """The state after :attr:`rounds_done` rounds, as plain arrays and lists (what
        ``checkpoint.save_checkpoint`` writes). ``rng_state``: the sampler's state to keep
        instead of its current one (a round stopped half-way keeps the state from before
        its cohort was drawn, so that resuming redoes it)."""
        return {"rounds_done": self.rounds_done, "backend": self.runner.snapshot(),
                "personal": self.store.snapshot(),
                "rng": rng_state if rng_state is not None else self.rng.bit_generator.state,
                **self.ledger.snapshot(), "rows": list(self.rows),
                "segments": None if self.segments is None else self.segments.upto(self.rows)}

    def restore(self, saved: dict) -> None:
        """The state of ``saved`` (a :meth:`snapshot`, as ``checkpoint.load_checkpoint``
        reads it back); its segments are the caller's (``SegmentLog``). A backend or personal
        state that does not fit this run (another process's arrays) is a ValueError raised
        before anything is taken."""
        backend = self.runner.snapshot()
        if not same_shapes(saved["backend"], backend):
            raise ValueError(f"the checkpoint's backend state ({len(saved['backend'])} arrays) "
                             f"does not fit this run's ({len(backend)})")
        self.store.restore(saved["personal"])          # checks its own shapes first
        self.runner.restore(saved["backend"])
        self.rng.bit_generator.state = saved["rng"]
        self.ledger.restore(saved)
        self.rows = list(saved["rows"])
