"""The FX passes: each rewrites a Dynamo graph (torch-level calls, parameters as placeholders) in place and
returns one line per change it made (an empty list: nothing matched). They run inside opprof's backend
(opprof.optimize.backend) before Inductor, so Inductor compiles the rewritten graph.

Exact tier (the same mathematics; results differ only by FP32 reassociation):
  fuse_projections     linears reading one input (Q, K, V) -> one linear over the concatenated weights, split
  attention_to_sdpa    matmul(q, k^T) [* or / scale] [masked_fill or + mask] softmax matmul(., v)
                       -> F.scaled_dot_product_attention with the same scale and mask
  causal_sdpa          SDPA whose mask is, in value, the causal (lower-triangular) mask -> is_causal=True, no mask
  fold_batchnorm       conv -> batch_norm(training=False) -> one conv with the folded weight and bias
Precision tier (opt-in, checked against the user's tolerance):
  cast_matmuls(dtype)  linear / matmul / addmm / SDPA on FP32 tensors -> inputs cast to bf16 or fp16,
                       outputs cast back to FP32 (Inductor fuses the casts into neighbouring kernels)
"""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx

from opprof.optimize import graph as g

Pass = Callable[[fx.GraphModule, Sequence[Any]], list[str]]


def _order(gm: fx.GraphModule) -> dict[fx.Node, int]:
    return {n: i for i, n in enumerate(gm.graph.nodes)}


# -- fuse_projections ---------------------------------------------------------------------------------
def fuse_projections(gm: fx.GraphModule, inputs: Sequence[Any]) -> list[str]:
    """Linears that read the same tensor with weights of one input width become one GEMM: each output
    element is still the dot product of one input row and one weight row."""
    groups: dict[tuple[fx.Node, bool], list[fx.Node]] = defaultdict(list)
    for node in gm.graph.nodes:
        if g.kind(node) != "linear":
            continue
        x, w, b = g.arg(node, 0, "input"), g.arg(node, 1, "weight"), g.arg(node, 2, "bias")
        if not (isinstance(x, fx.Node) and g.is_state(w) and (b is None or g.is_state(b))):
            continue
        if g.shape(w) is None or len(g.shape(w)) != 2:
            continue
        groups[(x, b is not None)].append(node)
    order = _order(gm)
    changes = []
    for (x, has_bias), linears in groups.items():
        by_width: dict[int, list[fx.Node]] = defaultdict(list)
        for node in linears:
            by_width[g.shape(g.arg(node, 1, "weight"))[1]].append(node)
        for width, same in by_width.items():
            if len(same) < 2:
                continue
            same.sort(key=order.__getitem__)
            weights = [g.arg(n, 1, "weight") for n in same]
            sizes = [g.shape(w)[0] for w in weights]
            with gm.graph.inserting_before(same[0]):
                weight = gm.graph.call_function(torch.cat, (weights, 0))
                bias = gm.graph.call_function(torch.cat, ([g.arg(n, 2, "bias") for n in same], 0)) if has_bias else None
                fused = gm.graph.call_function(torch._C._nn.linear, (x, weight, bias))
                parts = gm.graph.call_function(torch.split, (fused, sizes, -1))
                for i, node in enumerate(same):
                    node.replace_all_uses_with(gm.graph.call_function(operator.getitem, (parts, i)))
            paths = ", ".join(g.module_path(n) or n.name for n in same)
            changes.append(f"{len(same)} projections of {x.name} ({paths}) -> one {width}x{sum(sizes)} linear")
    if changes:
        g.finish(gm)
    return changes


# -- attention_to_sdpa --------------------------------------------------------------------------------
def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _last_two_dims(node: fx.Node, ndim: int) -> bool:
    """A transpose of the last two dimensions (k.transpose(-2, -1), k.transpose(2, 3) on 4-D)."""
    if g.kind(node) != "transpose":
        return False
    dims = {int(d) % ndim for d in node.args[1:3]} if len(node.args) >= 3 else set()
    return dims == {ndim - 2, ndim - 1}


def _match_attention(out: fx.Node) -> dict[str, Any] | None:
    """The hand-written attention ending at out = matmul(p, v), or None."""
    if g.kind(out) != "matmul" or len(out.args) < 2:
        return None
    probs, v = out.args[0], out.args[1]
    if not (isinstance(probs, fx.Node) and g.kind(probs) == "softmax" and g.single_user(probs)):
        return None
    dim = g.arg(probs, 1, "dim")
    scores = probs.args[0]
    ndim = len(g.shape(scores) or ())
    if probs.kwargs.get("dtype") is not None or dim is None or ndim < 2 or int(dim) % ndim != ndim - 1:
        return None
    mask, additive = None, False
    node = scores
    if isinstance(node, fx.Node) and g.kind(node) == "masked_fill" and g.single_user(node):
        fill = _number(g.arg(node, 2, "value"))
        if fill is None or not (fill == -math.inf or fill <= -1e30):
            return None
        mask, node = node.args[1], node.args[0]
    elif isinstance(node, fx.Node) and g.kind(node) == "add" and g.single_user(node) and isinstance(node.args[1], fx.Node):
        mask, additive, node = node.args[1], True, node.args[0]
    scale = 1.0
    if isinstance(node, fx.Node) and g.kind(node) in ("mul", "div") and g.single_user(node):
        left, right = node.args[0], node.args[1]
        if g.kind(node) == "mul" and _number(left) is not None:
            left, right = right, left  # scale * scores
        factor = _number(right)
        if factor is None or factor == 0:
            return None
        scale = factor if g.kind(node) == "mul" else 1.0 / factor
        node = left
    if not (isinstance(node, fx.Node) and g.kind(node) == "matmul" and g.single_user(node)):
        return None
    q, kt = node.args[0], node.args[1]
    if not (isinstance(kt, fx.Node) and g.single_user(kt) and _last_two_dims(kt, len(g.shape(kt) or ()))):
        return None
    if mask is not None and not isinstance(mask, fx.Node):
        return None
    return {"q": q, "k": kt.args[0], "v": v, "mask": mask, "additive": additive, "scale": scale}


def attention_to_sdpa(gm: fx.GraphModule, inputs: Sequence[Any]) -> list[str]:
    changes = []
    for node in list(gm.graph.nodes):
        found = _match_attention(node)
        if found is None:
            continue
        with gm.graph.inserting_before(node):
            mask = found["mask"]
            if mask is not None and not found["additive"]:
                mask = gm.graph.call_function(torch.logical_not, (mask,))  # masked_fill marks what SDPA drops
            sdpa = gm.graph.call_function(F.scaled_dot_product_attention, (found["q"], found["k"], found["v"]),
                                          {"attn_mask": mask, "scale": found["scale"]})
        sdpa.meta.update({k: v for k, v in node.meta.items() if k == "nn_module_stack"})
        node.replace_all_uses_with(sdpa)
        what = "no mask" if mask is None else ("an additive mask" if found["additive"] else "a masked_fill mask")
        changes.append(f"attention at {g.module_path(node) or node.name} (scale {found['scale']:.6g}, {what}) "
                       "-> scaled_dot_product_attention")
    if changes:
        g.finish(gm)
    return changes


# -- causal_sdpa --------------------------------------------------------------------------------------
_METADATA_ATTRS = {"device", "dtype", "shape", "ndim", "is_cuda"}
_METADATA_METHODS = {"size", "dim", "get_device", "numel"}


def _reads_metadata_only(node: fx.Node) -> bool:
    if node.op == "call_function" and node.target is getattr:
        return len(node.args) > 1 and node.args[1] in _METADATA_ATTRS
    return node.op == "call_method" and node.target in _METADATA_METHODS


def _depends_on_data(node: fx.Node) -> bool:
    """Whether node's value depends on a user input's values (not only on parameters, buffers, constants
    and the inputs' shapes, dtypes and devices)."""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.op == "placeholder" and not g.is_state(n) and isinstance(g.value(n), torch.Tensor):
            return True
        if not _reads_metadata_only(n):
            stack.extend(n.all_input_nodes)
    return False


def _evaluate(gm: fx.GraphModule, node: fx.Node, inputs: Sequence[Any]) -> Any:
    """node's value for these inputs, computed by the part of the graph it depends on."""
    sub = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    needed = set(g.ancestors(node))
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    feed = []
    for n in gm.graph.nodes:
        if n in needed:
            env[n] = sub.node_copy(n, lambda a: env[a])
            if n.op == "placeholder":
                feed.append(inputs[placeholders.index(n)])
    sub.output(env[node])
    with torch.no_grad():
        return fx.GraphModule(gm, sub)(*feed)


def is_causal_mask(mask: Any, length: int, source: int) -> bool:
    """True when mask (an SDPA attn_mask: boolean True = attend, or additive) selects exactly the causal
    positions j <= i of every (i, j) for every batch and head, so that is_causal=True computes the same."""
    if not isinstance(mask, torch.Tensor) or mask.dim() < 2 or tuple(mask.shape[-2:]) != (length, source):
        return False
    if length != source:
        return False  # is_causal aligns the triangle top-left; only the square case is unambiguous
    causal = torch.ones(length, source, dtype=torch.bool, device=mask.device).tril()
    if mask.dtype == torch.bool:
        return bool((mask == causal).all())
    if not mask.is_floating_point():
        return False
    kept, dropped = mask.masked_select(causal.expand_as(mask)), mask.masked_select(~causal.expand_as(mask))
    # -inf or a value so negative that exp() of it is 0 whatever the scores (finfo.min masks).
    return bool((kept == 0).all()) and bool((dropped <= -1e30).all())


_SDPA_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale")


def causal_sdpa(gm: fx.GraphModule, inputs: Sequence[Any]) -> list[str]:
    changes = []
    for node in list(gm.graph.nodes):
        if g.kind(node) != "sdpa":
            continue
        mask = g.arg(node, 3, "attn_mask")
        if not isinstance(mask, fx.Node) or g.arg(node, 5, "is_causal", False) or _number(g.arg(node, 4, "dropout_p", 0.0)):
            continue
        if _depends_on_data(mask) or any(isinstance(x, torch._subclasses.FakeTensor) for x in inputs):
            continue
        q, k = g.shape(node.args[0]), g.shape(node.args[1])
        if q is None or k is None or not is_causal_mask(_evaluate(gm, mask, inputs), q[-2], k[-2]):
            continue
        named = dict(zip(_SDPA_ARGS[3:], node.args[3:]), **node.kwargs)
        named.update(attn_mask=None, is_causal=True)
        node.args, node.kwargs = node.args[:3], named
        changes.append(f"SDPA at {g.module_path(node) or node.name}: its {q[-2]}x{k[-2]} mask is the causal mask "
                       "-> is_causal=True, mask dropped")
    if changes:
        g.finish(gm)
    return changes


# -- fold_batchnorm -----------------------------------------------------------------------------------
def fold_batchnorm(gm: fx.GraphModule, inputs: Sequence[Any]) -> list[str]:
    """conv(x, w, b) -> batch_norm(running statistics) == conv(x, w * s, (b - mean) * s + beta) with
    s = gamma / sqrt(var + eps); the folded weight is computed in the graph (constant under freezing)."""
    changes = []
    for bn in list(gm.graph.nodes):
        if g.kind(bn) != "batch_norm" or g.arg(bn, 5, "training", False):
            continue
        conv = bn.args[0]
        if not (isinstance(conv, fx.Node) and g.kind(conv) == "conv" and g.single_user(conv)):
            continue
        mean, var = g.arg(bn, 1, "running_mean"), g.arg(bn, 2, "running_var")
        gamma, beta, eps = g.arg(bn, 3, "weight"), g.arg(bn, 4, "bias"), g.arg(bn, 7, "eps", 1e-5)
        weight, bias = g.arg(conv, 1, "weight"), g.arg(conv, 2, "bias")
        if not (g.is_state(mean) and g.is_state(var) and g.is_state(weight)) or g.shape(weight) is None:
            continue
        ndim = len(g.shape(weight))
        call = gm.graph.call_function
        with gm.graph.inserting_before(conv):
            scale = call(torch.rsqrt, (call(operator.add, (var, float(eps))),))
            if gamma is not None:
                scale = call(operator.mul, (scale, gamma))
            new_weight = call(operator.mul, (weight, call(torch.reshape, (scale, (-1,) + (1,) * (ndim - 1)))))
            shifted = call(operator.neg, (mean,)) if bias is None else call(operator.sub, (bias, mean))
            new_bias = call(operator.mul, (shifted, scale))
            if beta is not None:
                new_bias = call(operator.add, (new_bias, beta))
        conv.args = (conv.args[0], new_weight, new_bias, *conv.args[3:])
        conv.kwargs = {k: v for k, v in conv.kwargs.items() if k not in ("weight", "bias")}
        bn.replace_all_uses_with(conv)
        changes.append(f"batch_norm {g.module_path(bn) or bn.name} folded into conv {g.module_path(conv) or conv.name}")
    if changes:
        g.finish(gm)
    return changes


# -- cast_matmuls (precision tier) ---------------------------------------------------------------------
_CAST_KINDS = {"linear", "matmul", "addmm", "baddbmm", "sdpa"}


def cast_matmuls(dtype: torch.dtype) -> Pass:
    def run(gm: fx.GraphModule, inputs: Sequence[Any]) -> list[str]:
        count = 0
        for node in list(gm.graph.nodes):
            if g.kind(node) not in _CAST_KINDS or g.dtype(node) != torch.float32:
                continue
            tensors = [a for a in node.all_input_nodes if g.dtype(a) == torch.float32]
            if not tensors:
                continue
            with gm.graph.inserting_before(node):
                casts = {a: gm.graph.call_method("to", (a, dtype)) for a in tensors}
            node.args = fx.node.map_arg(node.args, lambda a: casts.get(a, a))
            node.kwargs = fx.node.map_arg(node.kwargs, lambda a: casts.get(a, a))
            with gm.graph.inserting_after(node):
                back = gm.graph.call_method("to", (node, torch.float32))
            node.replace_all_uses_with(back, delete_user_cb=lambda user: user is not back)
            count += 1
        if count:
            g.finish(gm)
        name = str(dtype).removeprefix("torch.")
        return [f"{count} FP32 matmul/linear/attention call(s) run in {name}, outputs cast back to float32"] if count else []

    return run
