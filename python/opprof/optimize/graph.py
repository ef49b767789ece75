"""What the FX passes need to read Dynamo's graphs: one name per operation whatever spelling traced it
(``torch._C._nn.linear``, ``F.linear``; ``operator.matmul``, ``torch.matmul``, ``x.matmul``), the tensor a
node produced (its ``example_value`` or ``val``), and the ancestors of a node.

Dynamo writes a module's parameters and buffers as placeholders named ``L_self_modules_<path>_parameters_<name>_``
(``..._buffers_...``); user inputs are the other placeholders.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx

_FUNCTIONS: dict[Any, str] = {
    torch._C._nn.linear: "linear", F.linear: "linear",
    operator.matmul: "matmul", torch.matmul: "matmul", torch.bmm: "matmul", torch.mm: "matmul",
    torch.addmm: "addmm", torch.baddbmm: "baddbmm",
    operator.mul: "mul", torch.mul: "mul", operator.truediv: "div", torch.div: "div", operator.add: "add",
    torch.add: "add",
    F.softmax: "softmax", torch.softmax: "softmax", torch._C._nn.scaled_dot_product_attention: "sdpa",
    F.scaled_dot_product_attention: "sdpa", torch.masked_fill: "masked_fill", torch.where: "where",
    torch.transpose: "transpose", torch.conv1d: "conv", torch.conv2d: "conv", torch.conv3d: "conv",
    F.conv1d: "conv", F.conv2d: "conv", F.conv3d: "conv", F.batch_norm: "batch_norm", torch.batch_norm: "batch_norm",
    F.dropout: "dropout",
}
_METHODS = {"matmul": "matmul", "bmm": "matmul", "mm": "matmul", "softmax": "softmax", "masked_fill": "masked_fill",
            "transpose": "transpose", "mul": "mul", "div": "div", "add": "add", "__matmul__": "matmul"}

PARAMETER_MARK = "_parameters_"
BUFFER_MARK = "_buffers_"


def kind(node: fx.Node) -> str | None:
    """The operation a call node performs, as one name ("linear", "matmul", "softmax", ...); None for
    placeholders, outputs and calls this module does not name."""
    if node.op == "call_function":
        return _FUNCTIONS.get(node.target)
    if node.op == "call_method":
        return _METHODS.get(node.target)
    return None


def value(node: Any) -> Any:
    """The (fake) tensor a node produced, as Dynamo or FakeTensorProp recorded it; None when unknown."""
    if not isinstance(node, fx.Node):
        return None
    for key in ("val", "example_value"):  # val: refreshed by FakeTensorProp after a pass
        v = node.meta.get(key)
        if v is not None:
            return v
    return None


def shape(node: Any) -> tuple[int, ...] | None:
    v = value(node)
    return tuple(int(s) for s in v.shape) if isinstance(v, torch.Tensor) else None


def dtype(node: Any) -> torch.dtype | None:
    v = value(node)
    return v.dtype if isinstance(v, torch.Tensor) else None


def arg(node: fx.Node, index: int, name: str, default: Any = None) -> Any:
    """A call's argument by position or keyword (self counts as position 0 for methods)."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def is_state(node: Any) -> bool:
    """A placeholder holding a module's parameter or buffer (not a user input)."""
    return isinstance(node, fx.Node) and node.op in ("placeholder", "get_attr") and (
        PARAMETER_MARK in node.name or BUFFER_MARK in node.name or node.op == "get_attr"
        or isinstance(value(node), torch.nn.Parameter))


def ancestors(node: fx.Node) -> list[fx.Node]:
    """node and every node it depends on, in graph order."""
    seen: set[fx.Node] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(n.all_input_nodes)
    return [n for n in node.graph.nodes if n in seen]


def single_user(node: fx.Node) -> bool:
    return len(node.users) == 1


def module_path(node: fx.Node) -> str:
    """The module a node came from (Dynamo's nn_module_stack, innermost), as a dotted path; "" when unknown."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    return _clean_module_path(str(path))


def _clean_module_path(path: str) -> str:
    # Dynamo spells "L['self'].h[0].attn" or "L__self___h_0_attn"; the profile's spelling is "h.0.attn".
    for prefix in ("L['self'].", "L['self']"):
        if path.startswith(prefix):
            path = path[len(prefix):]
    return path.replace("[", ".").replace("]", "").replace("'", "")


def finish(gm: fx.GraphModule) -> None:
    """After a rewrite: drop what no longer feeds the output, check the graph, regenerate its code."""
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.recompile()
