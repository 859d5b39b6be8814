"""Which parameters of a model are *shared* (sent, clipped, noised, aggregated into the global
model) and which are *personal* (kept by each client between rounds, never sent).

A split is named by a spec string (config key ``personal``; the spec names the personal
part):

- ``"none"``: everything shared (FedAvg and the GDPFed family);
- ``"head"``: the last layer (a Dense layer: kernel and bias) personal, the body shared
  (FedRep, CENTAUR, DP-pFedDSU: a personal classifier on shared features);
- ``"rows:A-B"``: rows A..B (inclusive) of the first layer's Dense kernel personal, i.e. the
  weights of input features A..B; that layer's bias and every other tensor stay shared;
  ``"rows:half"``: the first half of those rows (MS-PAFL's "first half of the parameters
  private" on logistic regression without bias: features 0-6 of Adult's 14);
- ``"layers:NAME,NAME"``: the named Keras layers personal (all their trainable tensors).

:func:`split_model` turns a spec into a :class:`ParameterSplit`: one mask per trainable tensor,
in ``model.trainable_variables`` order, 1 on shared and 0 on personal coordinates, ``None``
for a tensor that is wholly shared (no arithmetic is spent on it).
"""
from __future__ import annotations

import dataclasses
import re
from typing import List, Optional, Tuple

import numpy as np

_ROWS = re.compile(r"^rows:(\d+)-(\d+)$")
HALF = "rows:half"


def check_spec(spec: str) -> Optional[str]:
    """Why ``spec`` is not a split spec (one line), or None. Needs no model."""
    if spec in ("none", "head", HALF) or _ROWS.match(spec):
        if _ROWS.match(spec):
            a, b = map(int, _ROWS.match(spec).groups())
            if a > b:
                return f"rows {a}-{b}: the first row is after the last"
        return None
    if spec.startswith("layers:") and all(spec[len("layers:"):].split(",")):
        return None
    return "must be 'none', 'head', 'rows:A-B', 'rows:half' or 'layers:NAME,NAME'"


@dataclasses.dataclass(frozen=True)
class ParameterSplit:
    """Per trainable tensor, its shared mask (float32, 1 = shared) or None (wholly shared)."""
    spec: str
    masks: Tuple[Optional[np.ndarray], ...]
    shapes: Tuple[Tuple[int, ...], ...]
    # the personal part is exactly the last layer, whole (a head on shared features)
    head: bool = False

    @property
    def trivial(self) -> bool:
        return all(m is None for m in self.masks)

    @property
    def personal_tensors(self) -> List[int]:
        """Indices of the tensors with any personal coordinate (the personal store's)."""
        return [i for i, m in enumerate(self.masks) if m is not None]

    @property
    def personal_count(self) -> int:
        return int(sum(m.size - m.sum() for m in self.masks if m is not None))

    @property
    def shared_count(self) -> int:
        return int(sum(int(np.prod(s)) if m is None else int(m.sum())
                       for m, s in zip(self.masks, self.shapes)))

    def combine(self, shared, personal) -> List:
        """A client's weights: ``shared`` (the global model's tensors) where shared, its
        personal rows (``personal``, one per :attr:`personal_tensors`, zero on shared
        coordinates) where personal. Numpy arrays or tensors, with or without a leading
        client axis."""
        rows = dict(zip(self.personal_tensors, personal))
        return [w if m is None else w * m + rows[i]
                for i, (w, m) in enumerate(zip(shared, self.masks))]

    def trainable(self, part: str) -> List:
        """Per tensor, the factor its gradient is multiplied by in a local phase that trains
        ``part``: "all" (None everywhere: nothing masked), "shared" or "personal"."""
        if part == "all":
            return [None] * len(self.masks)
        if part == "shared":
            return list(self.masks)
        if part == "personal":
            return [np.float32(0.0) if m is None else 1.0 - m for m in self.masks]
        raise ValueError(f"phase trains {part!r}: not 'all', 'shared' or 'personal'")


def _mask(shape, personal_rows=None) -> np.ndarray:
    m = np.zeros(shape, np.float32)
    if personal_rows is not None:
        m[:] = 1.0
        m[personal_rows] = 0.0
    return m


def split_model(model, spec: str) -> ParameterSplit:
    """The :class:`ParameterSplit` of a Keras ``model`` for ``spec`` (module docstring).
    Raises ValueError (one line naming the spec) when the model has no such part."""
    why = check_spec(spec)
    if why is not None:
        raise ValueError(f"personal={spec!r}: {why}")
    variables = model.trainable_variables
    shapes = tuple(tuple(int(d) for d in v.shape) for v in variables)
    masks: List[Optional[np.ndarray]] = [None] * len(variables)
    position = {v.ref(): i for i, v in enumerate(variables)}
    layers = [layer for layer in model.layers if layer.trainable_weights]
    head = False
    if spec == "head":
        last = model.layers[-1]
        if type(last).__name__ != "Dense":
            raise ValueError(f"personal='head': the model's last layer {last.name} is a "
                             f"{type(last).__name__}, not a Dense layer")
        for w in last.trainable_weights:
            masks[position[w.ref()]] = _mask(shapes[position[w.ref()]])
        head = True
    elif spec.startswith("rows:"):
        first = layers[0] if layers else None
        if first is None or type(first).__name__ != "Dense":
            raise ValueError(f"personal={spec!r}: the model's first layer is not a Dense layer")
        i = position[first.kernel.ref()]
        a, b = (0, shapes[i][0] // 2 - 1) if spec == HALF else map(int, _ROWS.match(spec).groups())
        if b >= shapes[i][0]:
            raise ValueError(f"personal={spec!r}: the first layer's kernel has {shapes[i][0]} "
                             "rows")
        masks[i] = _mask(shapes[i], slice(a, b + 1))
    elif spec.startswith("layers:"):
        names = spec[len("layers:"):].split(",")
        by_name = {layer.name: layer for layer in model.layers}
        for name in names:
            if name not in by_name:
                raise ValueError(f"personal={spec!r}: the model has no layer {name!r} "
                                 f"(layers: {', '.join(by_name)})")
            for w in by_name[name].trainable_weights:
                masks[position[w.ref()]] = _mask(shapes[position[w.ref()]])
        last = model.layers[-1]
        head = (len(names) == 1 and by_name[names[0]] is last
                and type(last).__name__ == "Dense")
    split = ParameterSplit(spec, tuple(masks), shapes, head)
    if spec != "none" and split.personal_count == 0:
        raise ValueError(f"personal={spec!r}: names no trainable parameter of model "
                         f"{model.name!r}")
    if split.shared_count == 0:
        raise ValueError(f"personal={spec!r}: leaves nothing shared in model {model.name!r}")
    return split
