"""Module ranges: a range "nn.Module: <path>" around every nn.Module forward call.

Where the range goes is the emitter's choice: RecordFunctionEmitter (default) opens a torch.profiler
record_function range (torch backend); NvtxEmitter pushes an NVTX range (tracer backend, where
torch.profiler is not running and the opprof tracer records NVTX instead).

The C++ engine attributes kernels to modules through these ranges (contract: the range text is
"nn.Module: " followed by the module's dotted path from the root model's named_modules(), and the root's
own range carries its class name). They are emitted from *global* forward pre-hooks and forward hooks,
so every module of every model is covered without touching user code, and the forward hook is
registered with always_call=True so that a range still closes when forward raises.

Paths. With a known root (the workload driver passes its model), every module's path comes from
root.named_modules(). For arbitrary scripts the root is discovered lazily: the first module called
while no module range is open on the thread is a root; when it is first seen, all its named_modules()
are given their dotted paths (so the paths do not depend on call order); a module called later inside
a parent whose tree does not contain it is looked up in the trees of the enclosing modules, and
otherwise becomes a root of its own. Paths are cached per module object (weakly, so dead modules do
not pin memory or let a recycled id() return a stale path).

Eager mode only: under torch.compile, Dynamo would trace the hooks into the graph; the hooks see
torch.compiler.is_compiling() and do nothing, so compiled regions carry no module ranges (their module
paths come from the FX map, opprof.fx_modules).
"""

from __future__ import annotations

import functools
import sys
import threading
import weakref
from typing import Any

from opprof import MODULE_RANGE_PREFIX


def _is_compiling() -> bool:
    import torch

    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling()
    return bool(getattr(torch._dynamo, "is_compiling", lambda: False)())  # torch < 2.3


def _is_compiling_function() -> Any:
    """torch.compiler.is_compiling itself where it exists (saves the lookups on a hot path)."""
    import torch

    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling
    return _is_compiling


def _is_jit_tracing() -> bool:
    import torch

    return bool(torch._C._get_tracing_state())


class ModulePathResolver:
    """Maps module objects to their dotted paths ("" for a root)."""

    def __init__(self, root: Any = None):
        # id(module) -> (weakref to module, path). The weakref both validates the entry (ids are
        # recycled after a module dies) and removes it when the module is collected.
        self._paths: dict[int, tuple[weakref.ref, str]] = {}
        self.roots_seen: list[str] = []  # class names of the roots, in order of discovery
        if root is not None:
            self.add_root(root)

    def lookup(self, module: Any) -> str | None:
        entry = self._paths.get(id(module))
        if entry is None:
            return None
        ref, path = entry
        if ref() is not module:
            return None
        return path

    def _remember(self, module: Any, path: str) -> None:
        key = id(module)

        def forget(dead_ref: weakref.ref, key: int = key, paths: dict = self._paths) -> None:
            current = paths.get(key)
            if current is not None and current[0] is dead_ref:
                del paths[key]

        try:
            ref = weakref.ref(module, forget)
        except TypeError:  # an object without weakref support: keep a strong reference instead
            ref = (lambda m: (lambda: m))(module)
        self._paths[key] = (ref, path)

    def add_root(self, root: Any) -> None:
        """Gives every module of root's tree its named_modules() path (the root itself gets "").

        torch.compile(model) returns an OptimizedModule wrapping the model as _orig_mod; its paths are
        the wrapped model's ("blocks.0", not "_orig_mod.blocks.0"), and the wrapper stands for the root.
        """
        tree = _unwrap_compiled(root)
        self.roots_seen.append(type(tree).__name__)
        for name, module in tree.named_modules():
            self._remember(module, name)
        self._remember(root, "")

    def resolve(self, module: Any, enclosing: list[Any]) -> str:
        """The path of `module`, called while `enclosing` (outermost first) are inside their forward."""
        path = self.lookup(module)
        if path is not None:
            return path
        for parent in reversed(enclosing):
            sub = _find_in_tree(parent, module)
            if sub is None:
                continue
            parent_path = self.lookup(parent)
            if parent_path is None:
                continue
            path = sub if parent_path == "" else f"{parent_path}.{sub}"
            self._remember(module, path)
            return path
        self.add_root(module)
        return ""

    @staticmethod
    def range_name(module: Any, path: str) -> str:
        return MODULE_RANGE_PREFIX + (path if path else type(_unwrap_compiled(module)).__name__)


def _unwrap_compiled(module: Any) -> Any:
    """The model inside a torch.compile wrapper (OptimizedModule._orig_mod), else the module itself."""
    inner = getattr(module, "_orig_mod", None)
    return inner if inner is not None and hasattr(inner, "named_modules") else module


def _find_in_tree(parent: Any, module: Any) -> str | None:
    """Dotted path of `module` below `parent`, or None. Direct children first: that is the usual case
    and avoids walking the whole subtree."""
    children = getattr(parent, "_modules", None) or {}
    for name, child in children.items():
        if child is module:
            return name
    named_modules = getattr(parent, "named_modules", None)
    if named_modules is None:
        return None
    for name, child in named_modules():
        if child is module and name:
            return name
    return None


class RecordFunctionEmitter:
    """Ranges as torch.profiler record_function ranges (what torch.profiler records)."""

    def enter(self, text: str) -> Any:
        import torch

        record = torch.autograd.profiler.record_function(text)
        record.__enter__()
        return record

    def exit(self, token: Any) -> None:
        token.__exit__(None, None, None)


class NvtxEmitter:
    """Ranges as NVTX push/pop on the calling thread (what the opprof tracer records).

    Without a CUDA build of torch, torch.cuda.nvtx raises on every call; the emitter then does nothing
    (there is no tracer to record the ranges either), so the same hooks run on CPU-only machines.
    """

    def __init__(self) -> None:
        self._push: Any = None
        self._pop: Any = None
        try:
            import torch

            nvtx = torch.cuda.nvtx
            nvtx.range_push("opprof nvtx probe")
            nvtx.range_pop()
            self._push, self._pop = nvtx.range_push, nvtx.range_pop
        except Exception:  # RuntimeError from torch's NVTX entry points on CPU-only builds, which only raise
            pass

    @property
    def active(self) -> bool:
        return self._push is not None

    def enter(self, text: str) -> Any:
        if self._push is not None:
            self._push(text)
        return None

    def exit(self, token: Any) -> None:
        if self._pop is not None:
            self._pop()


class ModuleForwardRanges:
    """Module ranges by wrapping the forward of every module of a known root (the tracer backend's way).

    Global module hooks send every module call through the slow path of Module._call_impl; measured on
    the development VM, that adds about 3.6 us per module call with empty hooks and 8.9 us with
    ModuleRangeHooks, against about 0.2 us for an instance-level forward wrapper. An eager GPT-2 small step
    makes about 160 module calls, so the hooks alone cost the tracer backend several percent of step time.

    Each module of root.named_modules() gets an instance attribute ``forward``: a function that pushes the
    module's NVTX range, calls the previous forward and pops the range (also when forward raises).
    functools.wraps keeps inspect.signature() working (Hugging Face inspects forward's parameters).
    uninstall() restores each module's previous instance attribute, or removes ours.

    Limits, where ModuleRangeHooks has none: modules added to the tree after install() and modules outside
    the root's tree get no range. Under torch.compile the wrapper only calls through (Dynamo inlines it).
    """

    method = "forward_wrappers"

    def __init__(self, root: Any, push: Any = None, pop: Any = None):
        if root is None or not hasattr(root, "named_modules"):
            raise ValueError("ModuleForwardRanges needs the root module")
        self.root = _unwrap_compiled(root)
        if push is None or pop is None:
            emitter = NvtxEmitter()
            push, pop = emitter._push, emitter._pop
        self._push = push
        self._pop = pop
        self._wrapped: list[tuple[Any, Any, bool]] = []  # (module, previous instance forward, had one)
        self.roots_seen = [type(self.root).__name__]

    @property
    def active(self) -> bool:
        """False where NVTX is unavailable (CPU-only torch): install() then wraps nothing."""
        return self._push is not None

    @property
    def modules_wrapped(self) -> int:
        return len(self._wrapped)

    @property
    def installed(self) -> bool:
        return bool(self._wrapped)

    def install(self) -> "ModuleForwardRanges":
        if self._wrapped or not self.active:
            return self
        for path, module in self.root.named_modules():
            text = ModulePathResolver.range_name(module, path)
            had_own = "forward" in module.__dict__
            previous = module.__dict__.get("forward")
            module.forward = self._wrap(module.forward, text)
            self._wrapped.append((module, previous, had_own))
        return self

    def _wrap(self, forward: Any, text: str) -> Any:
        push, pop, compiling = self._push, self._pop, _is_compiling_function()

        @functools.wraps(forward)
        def forward_in_range(*args: Any, **kwargs: Any) -> Any:
            if compiling():
                return forward(*args, **kwargs)
            push(text)
            try:
                return forward(*args, **kwargs)
            finally:
                pop()

        return forward_in_range

    def uninstall(self) -> None:
        for module, previous, had_own in reversed(self._wrapped):
            if had_own:
                module.forward = previous
            else:
                module.__dict__.pop("forward", None)
        self._wrapped.clear()

    def __enter__(self) -> "ModuleForwardRanges":
        return self.install()

    def __exit__(self, *exc: Any) -> None:
        self.uninstall()


_active_lock = threading.Lock()
_active: "ModuleRangeHooks | None" = None


class ModuleRangeHooks:
    """Installs the global hooks that emit the module ranges; use as a context manager or
    install()/uninstall(). Only one instance can be installed at a time (two would double every range)."""

    def __init__(self, root: Any = None, emitter: Any = None):
        self.resolver = ModulePathResolver(root)
        # enter(text) -> token, exit(token); ranges nest per thread in call order, which NVTX requires.
        self.emitter = emitter if emitter is not None else RecordFunctionEmitter()
        self._handles: list[Any] = []
        self._local = threading.local()
        self._warned_exit_failure = False
        self.ranges_opened = 0

    # -- per-thread stack of open ranges: [(module, emitter token)] --------------------------------
    def _stack(self) -> list[tuple[Any, Any]]:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = []
            self._local.stack = stack
        return stack

    def _pre_hook(self, module: Any, args: Any) -> None:
        if _is_compiling() or _is_jit_tracing():
            return None
        stack = self._stack()
        path = self.resolver.resolve(module, [m for m, _ in stack])
        token = self.emitter.enter(self.resolver.range_name(module, path))
        stack.append((module, token))
        self.ranges_opened += 1
        return None

    def _post_hook(self, module: Any, args: Any, output: Any) -> None:
        if _is_compiling() or _is_jit_tracing():
            return None
        stack = self._stack()
        for index in range(len(stack) - 1, -1, -1):
            if stack[index][0] is module:
                # Ranges above it belong to modules whose forward hook did not run (hooks installed in
                # the middle of a forward); close them too so the ranges stay properly nested.
                while len(stack) > index:
                    _, record = stack.pop()
                    self._exit(record)
                break
        return None

    def _exit(self, token: Any) -> None:
        try:
            self.emitter.exit(token)
        except Exception as exc:  # never break the user's forward because a range failed to close
            if not self._warned_exit_failure:
                self._warned_exit_failure = True
                print(f"opprof: closing a module range failed: {exc!r}", file=sys.stderr)

    # -- installation -----------------------------------------------------------------------------
    @property
    def installed(self) -> bool:
        return bool(self._handles)

    def install(self) -> "ModuleRangeHooks":
        global _active
        import torch.nn.modules.module as module_mod

        with _active_lock:
            if _active is not None and _active is not self:
                raise RuntimeError("opprof module-range hooks are already installed by another ModuleRangeHooks")
            if self._handles:
                return self
            self._handles.append(module_mod.register_module_forward_pre_hook(self._pre_hook))
            try:
                post = module_mod.register_module_forward_hook(self._post_hook, always_call=True)
            except TypeError:
                # torch without always_call (< 2.1): ranges of a forward that raises stay open until
                # an enclosing module's hook closes them.
                post = module_mod.register_module_forward_hook(self._post_hook)
            self._handles.append(post)
            _active = self
        return self

    def uninstall(self) -> None:
        global _active
        with _active_lock:
            for handle in self._handles:
                handle.remove()
            self._handles.clear()
            if _active is self:
                _active = None
        stack = self._stack()  # ranges left open on this thread (uninstalled inside a forward)
        while stack:
            _, record = stack.pop()
            self._exit(record)

    def __enter__(self) -> "ModuleRangeHooks":
        return self.install()

    def __exit__(self, *exc: Any) -> None:
        self.uninstall()


def module_ranges(root: Any = None, emitter: Any = None) -> ModuleRangeHooks:
    """Context manager: ``with opprof.hooks.module_ranges(model): ...`` (root and emitter optional)."""
    return ModuleRangeHooks(root, emitter)
