"""What a round of client work is made of, without TensorFlow: a local :class:`Phase`, and
FedAvg's client output and server step (GDPFed Alg. 1 lines 11 and 19), the defaults of
every method (``tff_idp.methods.base.Method``) and of the TFF process
(``learning.process``).
"""
from __future__ import annotations

import dataclasses
from typing import Optional


@dataclasses.dataclass(frozen=True)
class Phase:
    """One stretch of a client's local work in a round: which parameters it trains
    (``"all"``, ``"shared"`` or ``"personal"``) and for how long: ``steps`` mini-batches
    (full batches) or, when ``epochs`` is set, that many passes over the client's data
    (a short last batch). ``lr``: its own learning rate (decayed like local_lr; None: the
    round's). ``on_features``: it trains the model's linear read-out alone (a head's
    fine-tuning), so the fast backend computes the features under it once per client and
    round (the TFF client runs the same steps through the whole model). ``proximal``:
    lambda of a term lambda ||theta - theta_0||^2 in its loss (PMTL)."""
    train: str = "all"
    steps: int = 5
    epochs: Optional[int] = None
    lr: Optional[float] = None
    on_features: bool = False
    proximal: float = 0.0


def client_output(start, final, masks):
    """What a client sends: the shared part of its model change, (final - start) * mask
    per tensor (GDPFed Alg. 1 line 11 on the shared coordinates). Tensors may carry a
    leading client axis; a mask of None means wholly shared."""
    return [f - s if m is None else (f - s) * m for s, f, m in zip(start, final, masks)]

def server_update(weights, aggregate, server_lr, masks):
    """theta^{t+1} = theta^t + server_lr * aggregate (GDPFed Alg. 1 line 19). ``masks``
    (per tensor: 1 on shared coordinates, None for wholly shared) lets a method update
    the shared part alone in another way (MS-PAFL replaces it); the aggregate is zero on
    personal coordinates, so adding it leaves them as they are."""
    return [w + server_lr * u for w, u in zip(weights, aggregate)]
