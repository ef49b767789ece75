"""Operator ranges for the tracer backend: every PyTorch operator as an NVTX range.

The opprof tracer sees PyTorch operators only as NVTX ranges. Two sources, the first that works:

1. ``libopprof_torch_observer.so`` (built beside the tracer, against this process's torch): one C++
   RecordFunction callback pushes each operator's name into the NVTX domain "opprof.torch", with the
   RecordFunction scope + 1 as the category. No string formatting, no Python on the operator path.
2. ``torch.autograd.profiler.emit_nvtx()``: torch's own; it formats "<op>, seq = N, op_id = M" with a
   stringstream for every operator, which on an eager GPT-2 step costs several times what the observer does.

The library is found through OPPROF_TORCH_OBSERVER_LIB (``opprof profile`` sets it), else beside the
injected tracer (NVTX_INJECTION64_PATH): ``<dir>/../torch_observer/`` in a build tree (build/agents/), ``<dir>/`` in an
install. It is loaded only into the torch version it was built for: RecordFunction's C++ ABI is not stable
across releases, and a mismatch would crash rather than fail cleanly.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Any

from opprof import contract
from opprof.files import beside_tracer, first_existing

LIBRARY_NAME = contract.TORCH_OBSERVER_LIBRARY
ENV_LIBRARY = contract.ENV_TORCH_OBSERVER_LIB

# The reader takes ranges of this domain as operators, except those of category NVTX_CATEGORY_USER_SCOPE,
# which are record_function ranges (modules, compiled regions, annotations).
DOMAIN = contract.NVTX_DOMAIN_TORCH

_lock = threading.Lock()
_library: "ObserverLibrary | None" = None
_library_error: str | None = None


class ObserverLibrary:
    """The loaded libopprof_torch_observer.so."""

    def __init__(self, path: str):
        self.path = path
        self._lib = ctypes.CDLL(path)
        self._lib.opprof_torch_observer_built_for.restype = ctypes.c_char_p
        self._lib.opprof_torch_observer_enable.restype = ctypes.c_int
        self._lib.opprof_torch_observer_enable_empty.restype = ctypes.c_int
        self._lib.opprof_torch_observer_disable.restype = None
        self.built_for = self._lib.opprof_torch_observer_built_for().decode()

    def enable(self, empty: bool = False) -> bool:
        """True when this call turned the observer on (False: it was on already). ``empty`` registers a
        callback that records nothing: RecordFunction's own cost, the floor of any operator observer (for
        overhead breakdowns)."""
        rc = (self._lib.opprof_torch_observer_enable_empty if empty else self._lib.opprof_torch_observer_enable)()
        if rc < 0:
            raise RuntimeError(f"{self.path}: registering the RecordFunction callback failed (see stderr)")
        return rc == 0

    def disable(self) -> None:
        self._lib.opprof_torch_observer_disable()


def candidate_paths(environ: "os._Environ[str] | dict[str, str]" = os.environ) -> list[Path]:
    """Where the library may be, in the order tried."""
    explicit = environ.get(ENV_LIBRARY)
    if explicit:
        return [Path(explicit)]
    return beside_tracer(environ, "torch_observer", LIBRARY_NAME)


def load_observer(environ: "os._Environ[str] | dict[str, str]" = os.environ) -> tuple["ObserverLibrary | None", str]:
    """The observer library for this process's torch, or None and why not. Loads once per process."""
    global _library, _library_error
    with _lock:
        if _library is not None or _library_error is not None:
            return _library, _library_error or ""
        import torch

        found, reason = first_existing(candidate_paths(environ), environ, ENV_LIBRARY, LIBRARY_NAME,
                                       f"{ENV_LIBRARY}={environ.get(ENV_LIBRARY)} names no file")
        if found is not None:
            try:
                lib = ObserverLibrary(str(found))
            except (OSError, AttributeError) as exc:
                reason = f"{found}: cannot load: {exc}"
            else:
                if lib.built_for != torch.__version__:
                    reason = f"{found} was built for torch {lib.built_for}, this process runs torch {torch.__version__}"
                else:
                    _library = lib
        if _library is None:
            _library_error = reason
        return _library, reason


class OperatorRanges:
    """Context manager: operator ranges as NVTX while inside. ``source`` says which source is used
    ("observer" or "emit_nvtx"), ``fallback_reason`` why the observer was not."""

    def __init__(self, environ: "os._Environ[str] | dict[str, str] | None" = None, emit_factory: Any = None):
        self._environ = os.environ if environ is None else environ
        self._emit_factory = emit_factory
        self._observer: ObserverLibrary | None = None
        self._enabled_here = False
        self._emit: Any = None
        self.source = ""
        self.fallback_reason = ""

    def __enter__(self) -> "OperatorRanges":
        observer, reason = load_observer(self._environ)
        if observer is not None:
            self._observer = observer
            self._enabled_here = observer.enable()
            self.source = "observer"
            return self
        self.fallback_reason = reason
        if self._emit_factory is None:
            import torch

            self._emit = torch.autograd.profiler.emit_nvtx()
        else:
            self._emit = self._emit_factory()
        self._emit.__enter__()
        self.source = "emit_nvtx"
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._observer is not None:
            if self._enabled_here:
                self._observer.disable()
            self._observer = None
            self._enabled_here = False
        if self._emit is not None:
            emit, self._emit = self._emit, None
            emit.__exit__(None, None, None)

    def describe(self) -> str:
        if self.source == "observer":
            return f"observer ({_library.path if _library else '?'})"
        return f"emit_nvtx ({self.fallback_reason})" if self.fallback_reason else self.source
