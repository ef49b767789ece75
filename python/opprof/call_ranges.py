"""Module ranges without a Python frame per module call (CPython >= 3.12, the tracer backend's first choice).

The opprof_call_ranges extension (``agents/call_ranges/`` in the source tree) pushes an NVTX range when a watched
function starts and pops it when it returns or unwinds, named by the object in the function's first parameter.
Watching ``torch.nn.Module._call_impl`` with the range text of every module of the model gives the same
"nn.Module: <path>" ranges as opprof.hooks.ModuleForwardRanges, without a wrapper frame and the re-packing of
*args/**kwargs on each module call. sys.monitoring delivers the events: PY_START and PY_RETURN as local
events of that one code object, PY_UNWIND (only offered globally) filtered in C.

The extension is found through OPPROF_CALL_RANGES_DIR, else beside the injected tracer (NVTX_INJECTION64_PATH):
``<dir>/../call_ranges/`` in a build tree (build/agents/call_ranges/ beside build/agents/tracer/), ``<dir>/`` in
an install; its file name carries this interpreter's EXT_SUFFIX, so a copy built for another Python version is
never loaded.

Differences from ModuleForwardRanges: the range covers the module's hooks too (it is the whole call), and
modules outside the root's tree get no range (the same limit). Under torch.compile the watched code does not
run inside compiled regions (Dynamo inlines the module calls into its graph), so they carry no module ranges,
as with the other methods; Dynamo itself never sees the extension.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
import threading
from pathlib import Path
from typing import Any

from opprof import contract
from opprof.files import beside_tracer, first_existing

EXTENSION_NAME = contract.CALL_RANGES_EXTENSION
ENV_DIR = contract.ENV_CALL_RANGES_DIR
TOOL_NAME = "opprof call ranges"

_lock = threading.Lock()
_extension: Any = None
_extension_error: str | None = None
_watch_owner: "CallRanges | None" = None


def extension_filename() -> str:
    return EXTENSION_NAME + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def candidate_paths(environ: "os._Environ[str] | dict[str, str]" = os.environ) -> list[Path]:
    """Where the extension for this interpreter may be, in the order tried."""
    name = extension_filename()
    explicit = environ.get(ENV_DIR)
    if explicit:
        return [Path(explicit) / name]
    return beside_tracer(environ, "call_ranges", name)


def load_extension(environ: "os._Environ[str] | dict[str, str]" = os.environ) -> tuple[Any, str]:
    """The extension module, or None and why not. Loads once per process."""
    global _extension, _extension_error
    with _lock:
        if _extension is not None or _extension_error is not None:
            return _extension, _extension_error or ""
        reason = ""
        if sys.implementation.name != "cpython" or sys.version_info < (3, 12):
            reason = f"needs CPython >= 3.12 (sys.monitoring); this is {sys.implementation.name} {sys.version.split()[0]}"
        else:
            found, reason = first_existing(candidate_paths(environ), environ, ENV_DIR, extension_filename(),
                                           f"{ENV_DIR}={environ.get(ENV_DIR)} holds no {extension_filename()}")
            if found is not None:
                try:
                    loader = importlib.machinery.ExtensionFileLoader(EXTENSION_NAME, str(found))
                    spec = importlib.util.spec_from_file_location(EXTENSION_NAME, str(found), loader=loader)
                    assert spec is not None
                    module = importlib.util.module_from_spec(spec)
                    loader.exec_module(module)
                except (ImportError, OSError) as exc:
                    reason = f"{found}: cannot load: {exc}"
                else:
                    _extension = module
        if _extension is None:
            _extension_error = reason
        return _extension, reason


def _free_tool_id(monitoring: Any) -> int:
    """A sys.monitoring tool id nobody holds: the profiler's if free, else one of the unnamed ones."""
    for tool in (monitoring.PROFILER_ID, 3, 4, monitoring.OPTIMIZER_ID):
        if monitoring.get_tool(tool) is None:
            return tool
    raise RuntimeError("every sys.monitoring tool id opprof could use is taken")


class CallRanges:
    """Context manager: while inside, every call of ``code`` whose first argument is one of the objects of
    ``names`` (a dict, or (object, text) pairs for objects that are not hashable) runs inside an NVTX range with
    that text. One watch per process (the extension keeps one table)."""

    def __init__(self, code: Any, names: "dict[Any, str] | list[tuple[Any, str]]", extension: Any = None):
        if extension is None:
            extension, reason = load_extension()
            if extension is None:
                raise RuntimeError(f"opprof call ranges unavailable: {reason}")
        self._ext = extension
        self.code = code
        self.names = list(names.items()) if isinstance(names, dict) else list(names)
        self._tool: int | None = None

    @property
    def installed(self) -> bool:
        return self._tool is not None

    def install(self) -> "CallRanges":
        global _watch_owner
        if self._tool is not None:
            return self
        monitoring = sys.monitoring
        events = monitoring.events
        with _lock:
            if _watch_owner is not None:
                raise RuntimeError("opprof call ranges already watch another function in this process")
            tool = _free_tool_id(monitoring)
            monitoring.use_tool_id(tool, TOOL_NAME)
            try:
                self._ext.watch(self.code, self.names)
                monitoring.register_callback(tool, events.PY_START, self._ext.on_start)
                monitoring.register_callback(tool, events.PY_RETURN, self._ext.on_return)
                monitoring.register_callback(tool, events.PY_UNWIND, self._ext.on_unwind)
                monitoring.set_local_events(tool, self.code, events.PY_START | events.PY_RETURN)
                monitoring.set_events(tool, events.PY_UNWIND)
            except BaseException:
                self._release(tool)
                raise
            self._tool = tool
            _watch_owner = self
        return self

    def _release(self, tool: int) -> None:
        monitoring = sys.monitoring
        events = monitoring.events
        monitoring.set_events(tool, events.NO_EVENTS)
        monitoring.set_local_events(tool, self.code, events.NO_EVENTS)
        for event in (events.PY_START, events.PY_RETURN, events.PY_UNWIND):
            monitoring.register_callback(tool, event, None)  # free_tool_id keeps them before 3.14
        monitoring.free_tool_id(tool)
        self._ext.unwatch()

    def uninstall(self) -> None:
        global _watch_owner
        with _lock:
            if self._tool is None:
                return
            self._release(self._tool)
            self._tool = None
            _watch_owner = None

    def __enter__(self) -> "CallRanges":
        return self.install()

    def __exit__(self, *exc: Any) -> None:
        self.uninstall()


class ModuleCallRanges:
    """Module ranges of a known root through CallRanges on ``torch.nn.Module._call_impl``: the same texts as
    opprof.hooks.ModuleForwardRanges (ModulePathResolver.range_name of each module of root.named_modules()),
    and the same interface, so the capture driver can use either."""

    method = "call_ranges"

    def __init__(self, root: Any, extension: Any = None):
        from opprof.hooks import ModulePathResolver, _unwrap_compiled

        if root is None or not hasattr(root, "named_modules"):
            raise ValueError("ModuleCallRanges needs the root module")
        import torch

        self.root = _unwrap_compiled(root)
        names = [(module, ModulePathResolver.range_name(module, path)) for path, module in self.root.named_modules()]
        self._ranges = CallRanges(torch.nn.Module._call_impl.__code__, names, extension)
        self.roots_seen = [type(self.root).__name__]

    @property
    def modules_wrapped(self) -> int:
        return len(self._ranges.names)

    @property
    def installed(self) -> bool:
        return self._ranges.installed

    def install(self) -> "ModuleCallRanges":
        self._ranges.install()
        return self

    def uninstall(self) -> None:
        self._ranges.uninstall()

    def __enter__(self) -> "ModuleCallRanges":
        return self.install()

    def __exit__(self, *exc: Any) -> None:
        self.uninstall()


def module_ranges_for(root: Any) -> tuple[Any, str]:
    """The cheapest module-range method for a known root under the tracer: ModuleCallRanges where the
    extension loads, else ModuleForwardRanges; and, for the log, why the fallback was taken ("" if none)."""
    extension, reason = load_extension()
    if extension is not None:
        return ModuleCallRanges(root, extension), ""
    from opprof.hooks import ModuleForwardRanges

    return ModuleForwardRanges(root), reason
