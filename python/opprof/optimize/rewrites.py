"""The rewrites the optimizer knows, and how a list of them turns a model into what runs.

Each rewrite is an FX pass (opprof.optimize.passes, run by opprof's backend) or, where FX cannot express
it, a documented option: an Inductor option (freezing, CUDA graphs), a change to the module tree (an RNN
module excluded from compilation, channels_last) or a global matmul setting (TF32). ``apply`` is what the
optimizer measures and what the saved code the user adopts calls.

Tiers: ``exact`` rewrites compute the same mathematics (results move only by FP32 reassociation);
``precision`` rewrites change the arithmetic (TF32, BF16, FP16) and run only when the user allows that
precision, within the user's tolerance.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

EXACT = "exact"
PRECISION = "precision"


@dataclass(frozen=True)
class Rewrite:
    name: str
    tier: str
    mechanism: str  # "FX pass", "Inductor option", "module option", "global setting"
    does: str


CATALOG: dict[str, Rewrite] = {r.name: r for r in (
    Rewrite("fuse_projections", EXACT, "FX pass", "linears of one input (Q/K/V) fused into one linear, outputs split"),
    Rewrite("attention_to_sdpa", EXACT, "FX pass",
            "hand-written attention (matmul, scale, mask, softmax, matmul) -> scaled_dot_product_attention"),
    Rewrite("causal_sdpa", EXACT, "FX pass", "an attention mask that is the causal mask -> is_causal=True, mask dropped"),
    Rewrite("fold_batchnorm", EXACT, "FX pass", "eval BatchNorm after a convolution folded into its weight and bias"),
    Rewrite("channels_last", EXACT, "module option", "model and 4-D inputs in channels_last memory format"),
    Rewrite("rnn_cudnn", EXACT, "module option",
            "RNN module excluded from torch.compile (torch.compiler.disable): one cuDNN call instead of unrolled GEMMs"),
    Rewrite("freezing", EXACT, "Inductor option",
            "freezing=True: weights are constants (folded, pre-laid-out) in an inference graph"),
    Rewrite("cuda_graphs", EXACT, "Inductor option",
            "triton.cudagraphs=True (mode reduce-overhead): the step's kernels replayed as one CUDA graph"),
    Rewrite("tf32", PRECISION, "global setting", "FP32 matmuls and cuDNN on TF32 tensor cores"),
    Rewrite("bf16", PRECISION, "FX pass", "FP32 matmuls, linears and attention in bfloat16, outputs cast back"),
    Rewrite("fp16", PRECISION, "FX pass", "FP32 matmuls, linears and attention in float16, outputs cast back"),
)}

_FX_REWRITES = ("fuse_projections", "attention_to_sdpa", "causal_sdpa", "fold_batchnorm", "bf16", "fp16")
_INDUCTOR_OPTIONS = {"freezing": {"freezing": True}, "cuda_graphs": {"triton.cudagraphs": True}}


@dataclass(frozen=True)
class Step:
    """One rewrite as applied: its name and, for module options, the module paths it applies to."""
    name: str
    targets: tuple[str, ...] = ()

    @property
    def rewrite(self) -> Rewrite:
        return CATALOG[self.name]

    def __str__(self) -> str:
        return self.name + (f"({', '.join(self.targets)})" if self.targets else "")


@dataclass
class Built:
    """A model prepared for a list of steps: call ``runner(*inputs)`` inside ``flags()``."""
    runner: Any
    model: Any
    inputs: Any
    tf32: bool
    steps: tuple[Step, ...] = ()
    changes: dict[str, list[str]] = field(default_factory=dict)

    def flags(self) -> contextlib.AbstractContextManager:
        return precision_flags(self.tf32)


@contextlib.contextmanager
def precision_flags(tf32: bool) -> Iterator[None]:
    """TF32 for FP32 matmuls (cuBLAS) and cuDNN (convolutions, RNNs) on or off for the duration, restored
    after. Off is true FP32 for both: PyTorch's default lets cuDNN use TF32, a precision change the exact
    tier must not make unseen."""
    import torch

    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def to_channels_last(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.contiguous(memory_format=torch.channels_last) if value.dim() == 4 else value
    if isinstance(value, dict):
        return {k: to_channels_last(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_channels_last(v) for v in value)
    return value


def apply(model: Any, inputs: Any, steps: Sequence[Step], compile: str = "inductor", copy_model: bool = True) -> Built:
    """The model with the steps applied, compiled (compile="inductor") or run eagerly with the FX passes
    through Dynamo (compile="eager"). The model is copied first unless copy_model is False."""
    import torch

    from opprof.optimize.backend import make_backend

    names = [s.name for s in steps]
    unknown = [n for n in names if n not in CATALOG]
    if unknown:
        raise KeyError(f"unknown rewrite(s) {', '.join(unknown)} (known: {', '.join(CATALOG)})")
    model = copy.deepcopy(model) if copy_model else model
    tf32 = "tf32" in names
    if "channels_last" in names:
        model = model.to(memory_format=torch.channels_last)
        inputs = to_channels_last(inputs)
    for step in steps:
        if step.name == "rnn_cudnn":
            for path in step.targets:
                module = model.get_submodule(path)
                module.forward = torch.compiler.disable(module.forward)  # eager: nn.LSTM dispatches to cuDNN
    fx_names = [n for n in names if n in _FX_REWRITES]
    options: dict[str, Any] = {}
    for name in names:
        options.update(_INDUCTOR_OPTIONS.get(name, {}))
    changes: dict[str, list[str]] = {}
    if compile == "inductor":
        runner = torch.compile(model, backend=make_backend(fx_names, options, changes))
    elif options:
        raise ValueError(f"{', '.join(n for n in names if n in _INDUCTOR_OPTIONS)} need(s) --compile inductor")
    elif fx_names:
        runner = torch.compile(model, backend=make_backend(fx_names, None, changes))
    else:
        runner = model
    return Built(runner=runner, model=model, inputs=inputs, tf32=tf32, steps=tuple(steps), changes=changes)
