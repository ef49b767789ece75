"""opprof's torch.compile backend: runs the chosen FX passes on each graph Dynamo captures, then hands
the rewritten graph to Inductor with the chosen Inductor options (or, for an eager workload, runs it as is).

  >>> compiled = torch.compile(model, backend=make_backend(["fuse_projections", "attention_to_sdpa"],
  ...                                                      {"freezing": True}))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import fx

from opprof.optimize import passes


def fx_pass(name: str) -> passes.Pass:
    """The FX pass of that name (opprof.optimize.passes); bf16 / fp16 are cast_matmuls of that dtype."""
    table: dict[str, passes.Pass] = {
        "fuse_projections": passes.fuse_projections,
        "attention_to_sdpa": passes.attention_to_sdpa,
        "causal_sdpa": passes.causal_sdpa,
        "fold_batchnorm": passes.fold_batchnorm,
        "bf16": passes.cast_matmuls(torch.bfloat16),
        "fp16": passes.cast_matmuls(torch.float16),
    }
    if name not in table:
        raise KeyError(f"{name!r} is not an FX pass (passes: {', '.join(table)})")
    return table[name]


def refresh_meta(gm: fx.GraphModule, inputs: Sequence[Any]) -> None:
    """Records every node's (fake) value again, so that a pass sees the shapes and dtypes of what an
    earlier pass inserted. Where fake propagation cannot run a node, the values recorded up to it stand and
    the rest keep Dynamo's: a pass skips a node whose value it does not know."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    try:
        FakeTensorProp(gm, FakeTensorMode(allow_non_fake_inputs=True)).propagate(*inputs)
    except Exception:  # noqa: BLE001 - see the docstring: partial values are still right
        pass


def make_backend(pass_names: Sequence[str], inductor_options: dict[str, Any] | None = None,
                 changes: dict[str, list[str]] | None = None) -> Callable[..., Any]:
    """A torch.compile backend. inductor_options None: no Inductor (the rewritten graph runs eagerly).
    changes, when given, collects what each pass changed, by pass name, over every graph compiled."""
    chosen = [(name, fx_pass(name)) for name in pass_names]
    log = changes if changes is not None else {}

    def backend(gm: fx.GraphModule, example_inputs: Sequence[Any], **_: Any) -> Callable[..., Any]:
        for name, run in chosen:
            refresh_meta(gm, example_inputs)
            log.setdefault(name, []).extend(run(gm, example_inputs))
        if inductor_options is None:
            return gm.forward
        from torch._inductor.compile_fx import compile_fx

        return compile_fx(gm, example_inputs, config_patches=dict(inductor_options))

    return backend
