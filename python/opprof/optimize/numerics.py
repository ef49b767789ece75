"""Numerical agreement of a rewritten model with the original: max absolute and relative error on every
output tensor and, for training, on every parameter's gradient.

The relative error is the max absolute error over the compared tensors (all outputs, or all gradients)
divided by the largest magnitude of the reference's tensors: an elementwise ratio is unbounded where the
reference crosses zero, and a per-tensor one where a tensor is zero in exact arithmetic (the gradient of a
key bias under softmax) and only rounding noise in FP32. A NaN or infinity where the reference has a finite
value fails outright.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass
class Agreement:
    max_abs: float
    max_rel: float
    tensors: int
    grad_max_abs: float | None = None  # training only
    grad_max_rel: float | None = None
    nonfinite: str = ""  # where a non-finite value appeared that the reference does not have

    @property
    def worst_rel(self) -> float:
        if self.nonfinite:
            return math.inf
        return max(self.max_rel, self.grad_max_rel or 0.0)

    def within(self, tolerance: float) -> bool:
        return self.worst_rel <= tolerance

    def text(self) -> str:
        out = f"max abs {self.max_abs:.3g}, max rel {self.max_rel:.3g} ({self.tensors} output tensor(s))"
        if self.grad_max_abs is not None:
            out += f"; gradients max abs {self.grad_max_abs:.3g}, max rel {self.grad_max_rel:.3g}"
        if self.nonfinite:
            out += f"; non-finite values in {self.nonfinite}"
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"max_abs": self.max_abs, "max_rel": self.max_rel, "tensors": self.tensors,
                "grad_max_abs": self.grad_max_abs, "grad_max_rel": self.grad_max_rel, "nonfinite": self.nonfinite}


def tensors_of(value: Any) -> list[Any]:
    """The tensors of a model output (tensor, tuple/list, dict, or a ModelOutput with to_tuple()), in order."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if hasattr(value, "to_tuple"):
        value = value.to_tuple()
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
    return [t for item in items for t in tensors_of(item)]


def _compare(reference: list[Any], candidate: list[Any], what: str) -> tuple[float, float, str]:
    if len(reference) != len(candidate):
        raise ValueError(f"{what}: {len(candidate)} tensor(s) where the original has {len(reference)}")
    max_abs = scale = 0.0
    nonfinite = []
    for i, (ref, got) in enumerate(zip(reference, candidate)):
        if tuple(ref.shape) != tuple(got.shape):
            raise ValueError(f"{what} {i}: shape {tuple(got.shape)} where the original has {tuple(ref.shape)}")
        ref, got = ref.detach().double().cpu(), got.detach().double().cpu()
        finite = ref.isfinite()
        if bool((finite & ~got.isfinite()).any()):
            nonfinite.append(f"{what} {i}")
        if not bool(finite.any()):
            continue
        max_abs = max(max_abs, (ref[finite] - got[finite]).abs().max().item())
        scale = max(scale, ref[finite].abs().max().item())
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
    return max_abs, max_rel, ", ".join(nonfinite)


def compare(reference_outputs: Any, outputs: Any, reference_grads: list[Any] | None = None,
            grads: list[Any] | None = None) -> Agreement:
    ref, got = tensors_of(reference_outputs), tensors_of(outputs)
    max_abs, max_rel, bad = _compare(ref, got, "output")
    agreement = Agreement(max_abs, max_rel, len(ref), nonfinite=bad)
    if reference_grads is not None and grads is not None:
        pairs = [(r, c) for r, c in zip(reference_grads, grads) if r is not None or c is not None]
        missing = [i for i, (r, c) in enumerate(pairs) if r is None or c is None]
        if missing:
            raise ValueError(f"gradient {missing[0]}: present in one model and not the other")
        g_abs, g_rel, g_bad = _compare([r for r, _ in pairs], [c for _, c in pairs], "gradient")
        agreement.grad_max_abs, agreement.grad_max_rel = g_abs, g_rel
        agreement.nonfinite = ", ".join(x for x in (bad, g_bad) if x)
    return agreement
