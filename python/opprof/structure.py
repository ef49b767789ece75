"""Structural classes of a model's module instances, for layer dedup (docs/dedup.md).

Two module instances are of one class when their subtrees are built the same and were called the same:
type, own parameters and buffers (shapes, dtypes), hyperparameters (extra_repr), children (names and their
signatures, recursively) and what they ran on at run time: in eager mode the shapes and dtypes of the
inputs of their first call (a forward pre-hook that removes itself after one call, so only the first
warm-up iteration pays for it); in compiled graphs the pre-grad FX nodes inside the module (each node's
target and output shape and dtype, in graph order), recorded by opprof.fx_modules. A class is a maximal
repeated subtree: GPT-2's twelve `transformer.h.N` blocks are one class and the Linear layers inside a
block belong to it, not to classes of their own. The engine (src/opprof/dedup) reads the classes, takes the
first instance as the representative, and replays only it under ncu.

The capture directory's opprof_structure.json (format version 1):

  {"format": "opprof-structure", "version": 1,
   "root": "GPT2LMHeadModel",
   "runtime": "eager_inputs" | "fx_graph" | "static",
   "modules": [{"path": "transformer.h.0", "type": "GPT2Block", "signature": "3f2a...", "size": 12,
                "called": true}],
   "classes": [{"signature": "3f2a...", "type": "GPT2Block", "size": 12,
                "instances": ["transformer.h.0", "transformer.h.1", ...]}]}

"size" is the number of modules in the subtree; "called" whether the runtime part saw the module run
(a module that never ran gets no runtime part and can still match one that did not either). Classes come
largest subtree first, instances in named_modules() order (the first is the representative).
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

from opprof.contract import STRUCTURE_FILE
from opprof.files import write_json_atomic

STRUCTURE_FORMAT = "opprof-structure"
STRUCTURE_VERSION = 1


def value_signature(value: Any) -> Any:
    """What a call's argument says about the kernels it will launch: tensors by shape, dtype and device
    type; containers element-wise; bools, None and strings by value; other scalars by type only (a layer
    index passed as an int must not split identical layers)."""
    import torch

    if isinstance(value, torch.Tensor):
        return ["tensor", list(value.shape), str(value.dtype).removeprefix("torch."), value.device.type]
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [value_signature(v) for v in value]]
    if isinstance(value, dict):
        return ["dict", [[str(k), value_signature(v)] for k, v in value.items()]]
    if value is None or isinstance(value, (bool, str)):
        return value
    return type(value).__name__


def _digest(parts: Any) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:16]


def _own_tensors(module: Any) -> list[Any]:
    items = []
    for kind, named in (("param", module.named_parameters(recurse=False)), ("buffer", module.named_buffers(recurse=False))):
        for name, t in named:
            if t is not None:
                items.append([kind, name, list(t.shape), str(t.dtype).removeprefix("torch."), t.requires_grad])
    return items


def _extra_repr(module: Any) -> str:
    try:
        return module.extra_repr()
    except Exception:  # a user module whose extra_repr fails: its type and tensors still describe it
        return ""


class StructureRecorder:
    """Computes module signatures of one root model and writes opprof_structure.json.

    install() adds a one-shot forward pre-hook to every module (eager mode); runtime_from_fx() takes the
    runtime part from the FX module map's per-module graph signatures instead (compiled models).
    """

    def __init__(self, root: Any):
        from opprof.hooks import _unwrap_compiled

        self.root = _unwrap_compiled(root)
        self.modules: list[tuple[str, Any]] = list(self.root.named_modules())
        self.runtime: dict[str, str] = {}  # path -> digest of what the module ran on
        self.runtime_kind = "static"
        self._handles: list[Any] = []

    # -- runtime part -------------------------------------------------------------------------------
    def record_root_call(self, args: Any, kwargs: Any = None) -> None:
        """The root's inputs, for a root found during its own call (RootWatcher), whose pre-hook came late."""
        self.runtime.setdefault("", _digest([value_signature(args), value_signature(kwargs or {})]))

    def install(self) -> "StructureRecorder":
        """One-shot forward pre-hooks recording the inputs of each module's first call."""
        if self._handles:
            return self
        self.runtime_kind = "eager_inputs"
        for path, module in self.modules:
            state: dict[str, Any] = {}
            state["handle"] = module.register_forward_pre_hook(self._hook_for(path, state), with_kwargs=True)
            self._handles.append(state["handle"])
        return self

    def _hook_for(self, path: str, state: dict[str, Any]) -> Any:
        def first_call(_module: Any, args: Any, kwargs: Any) -> None:
            if path not in self.runtime:
                self.runtime[path] = _digest([value_signature(args), value_signature(kwargs)])
            state["handle"].remove()  # after its first call the module runs at full speed again
            return None

        return first_call

    def uninstall(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def runtime_from_fx(self, module_graphs: dict[str, str]) -> None:
        """The runtime part from compiled graphs: {module path: digest of its pre-grad FX nodes}."""
        self.runtime_kind = "fx_graph"
        self.runtime.update(module_graphs)

    # -- signatures and classes ---------------------------------------------------------------------
    def signatures(self) -> tuple[dict[str, str], dict[str, int]]:
        """Per path the recursive signature and the subtree size, children before parents."""
        children: dict[str, list[tuple[str, str]]] = {p: [] for p, _ in self.modules}
        for path, _ in self.modules:
            if path:
                parent, _, name = path.rpartition(".")
                if parent in children:
                    children[parent].append((name, path))
        sig: dict[str, str] = {}
        size: dict[str, int] = {}
        for path, module in reversed(self.modules):  # named_modules() is pre-order: children come later
            kids = children[path]
            size[path] = 1 + sum(size[c] for _, c in kids)
            sig[path] = _digest([
                type(module).__module__, type(module).__qualname__, _own_tensors(module), _extra_repr(module),
                [[name, sig[c]] for name, c in kids], self.runtime.get(path),
            ])
        return sig, size

    def classes(self) -> list[dict[str, Any]]:
        sig, size = self.signatures()
        order = {p: i for i, (p, _) in enumerate(self.modules)}
        groups: dict[str, list[str]] = {}
        for path, _ in self.modules:
            groups.setdefault(sig[path], []).append(path)
        covered: set[str] = set()
        out = []
        # Largest subtrees first: an instance's own descendants then count as covered by its class.
        for signature in sorted(groups, key=lambda s: (-size[groups[s][0]], order[groups[s][0]])):
            instances = [p for p in groups[signature] if p not in covered]
            if len(instances) < 2:
                continue
            for p in instances:
                prefix = p + "."
                covered.update(q for q, _ in self.modules if q.startswith(prefix))
            first = dict(self.modules)[instances[0]]
            out.append({"signature": signature, "type": type(first).__name__, "size": size[instances[0]],
                        "instances": sorted(instances, key=order.__getitem__)})
        return out

    def document(self) -> dict[str, Any]:
        sig, size = self.signatures()
        return {
            "format": STRUCTURE_FORMAT,
            "version": STRUCTURE_VERSION,
            "root": type(self.root).__name__,
            "runtime": self.runtime_kind,
            "modules": [{"path": p, "type": type(m).__name__, "signature": sig[p], "size": size[p],
                         "called": p in self.runtime} for p, m in self.modules],
            "classes": self.classes(),
        }

    def write(self, directory: Any) -> str:
        from pathlib import Path

        path = Path(directory) / STRUCTURE_FILE
        write_json_atomic(path, self.document())
        return str(path)


def fx_module_graph_signatures(graph_module: Any, known_paths: Iterable[str] | None = None) -> dict[str, str]:
    """{module path: digest} of a pre-grad FX graph: for every module on a node's nn_module_stack, the
    node's target and output shape/dtype, in graph order, with names relative to nothing (node names carry
    the layer index, targets and shapes do not)."""
    from opprof.fx_modules import normalize_module_path

    known = list(known_paths) if known_paths is not None else None
    per_module: dict[str, list[Any]] = {}
    for node in graph_module.graph.nodes:
        if node.op in ("placeholder", "output", "get_attr"):
            continue
        stack = node.meta.get("nn_module_stack") or {}
        values = list(stack.values()) if hasattr(stack, "values") else []
        # A call_module node's target is the module's path, which carries the layer index: its type says it.
        target = "" if node.op == "call_module" else getattr(node.target, "__name__", None) or str(node.target)
        entry = [node.op, target, value_signature_meta(node.meta.get("val", node.meta.get("tensor_meta")))]
        for value in values:
            raw = value[0] if isinstance(value, (tuple, list)) and value else value
            if isinstance(raw, str):
                per_module.setdefault(normalize_module_path(raw, known), []).append(entry)
    return {path: _digest(entries) for path, entries in per_module.items()}


def value_signature_meta(value: Any) -> Any:
    """value_signature for an FX node's meta["val"] (FakeTensors, or tuples of them) or its
    meta["tensor_meta"] (shape propagation's record of shape and dtype)."""
    if hasattr(value, "shape") and hasattr(value, "dtype") and not hasattr(value, "device"):
        return ["tensor", list(value.shape), str(value.dtype).removeprefix("torch.")]
    try:
        return value_signature(value)
    except Exception:
        return type(value).__name__


class RootWatcher:
    """Finds the model of a script that opprof does not hand a model to: the first module called while no
    module's forward is running, reported once to on_root(module, args, kwargs), after which the global
    hooks are removed (they slow every module call). Used by pass A (the structure) and pass B (the dedup
    selection's hooks) in script mode."""

    def __init__(self, on_root: Any):
        self.on_root = on_root
        self._handles: list[Any] = []
        self._depth = 0
        self.root: Any = None

    def install(self) -> "RootWatcher":
        import torch.nn.modules.module as module_mod

        self._handles.append(module_mod.register_module_forward_pre_hook(self._pre))
        self._handles.append(module_mod.register_module_forward_hook(self._post, always_call=True))
        return self

    def _pre(self, module: Any, args: Any) -> None:
        from opprof.hooks import _is_compiling

        if _is_compiling():
            return None
        if self._depth == 0 and self.root is None:
            self.root = module
            self.on_root(module, args)
        self._depth += 1
        return None

    def _post(self, module: Any, args: Any, output: Any) -> None:
        from opprof.hooks import _is_compiling

        if _is_compiling():
            return None
        self._depth = max(0, self._depth - 1)
        if self._depth == 0 and self.root is not None:
            self.uninstall()
        return None

    def uninstall(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


def is_compiled_module(module: Any) -> bool:
    """A torch.compile wrapper (OptimizedModule): its inner modules' hooks do not run per call."""
    return getattr(module, "_orig_mod", None) is not None
