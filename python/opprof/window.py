"""The capture window: which part of a run each pass records.

Pass A (timeline) records with torch.profiler; pass B (counters) runs under
``ncu --profile-from-start off`` and opens ncu's window with cudaProfilerStart/Stop. Both passes must
cover the same iterations, or the engine cannot match ncu rows to timeline kernels; the rules here are
therefore the same for both passes and only the backend differs.

- Workload modules (opprof.capture --workload): the driver opens the window around the measured
  iterations itself (kind "workload"), or around the whole run with --window whole.
- Scripts (opprof.capture -- script.py): a script that calls torch.cuda.profiler.start()/stop() (or
  torch.cuda.cudart().cudaProfilerStart()/Stop(), or uses torch.cuda.profiler.profile()) chooses its
  window (kind "script"). Those functions are patched: in pass A they start/stop torch.profiler, in
  pass B they call the real CUDA functions. Only the first window is honoured, in both passes alike;
  later ones are counted and ignored, because torch.profiler records one window per run.
  With --window auto (default), a script that never opens a window is profiled whole (kind
  "whole_run"): pass A keeps a profiler running from the start and discards it when the script opens a
  window; pass B cannot know in advance, so the orchestrator runs ncu with --profile-from-start on when
  pass A reports "whole_run". With --window script, a window that never opens is an error
  ("never_opened"); with --window whole the script's calls are ignored and the whole run is recorded.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable

from opprof import contract

WINDOW_MODES = ("auto", "script", "whole")

KIND_WORKLOAD = contract.WINDOW_KIND_WORKLOAD
KIND_SCRIPT = contract.WINDOW_KIND_SCRIPT
KIND_WHOLE_RUN = contract.WINDOW_KIND_WHOLE_RUN
KIND_NEVER_OPENED = contract.WINDOW_KIND_NEVER_OPENED


def _log(message: str) -> None:
    print(f"[opprof] {message}", file=sys.stderr, flush=True)


class Backend:
    """What a window does when it opens and closes. discard() ends a recording that is not wanted."""

    name = contract.WINDOW_BACKEND_NONE

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def discard(self) -> None:
        self.stop()


class TorchProfilerBackend(Backend):
    """torch.profiler over the window; the Chrome trace is exported when the window closes."""

    name = "torch.profiler"

    def __init__(self, trace_path: str, with_cuda: bool):
        self.trace_path = trace_path
        self.with_cuda = with_cuda
        self._profiler: Any = None
        self.exported = False

    def start(self) -> None:
        import torch

        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.with_cuda:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self._profiler = torch.profiler.profile(activities=activities, record_shapes=False)
        self._profiler.start()

    def stop(self) -> None:
        if self._profiler is None:
            return
        profiler, self._profiler = self._profiler, None
        profiler.stop()
        started = time.perf_counter()
        profiler.export_chrome_trace(self.trace_path)
        self.exported = True
        _log(f"trace exported to {self.trace_path} ({time.perf_counter() - started:.1f} s)")

    def discard(self) -> None:
        if self._profiler is None:
            return
        profiler, self._profiler = self._profiler, None
        profiler.stop()


# torch.cuda.cudart as it was before patch_cuda_profiler_api replaced it (None while not patched).
_unpatched_cudart: Callable[[], Any] | None = None


def real_cudart() -> Any:
    """The CUDA runtime module, never the patched proxy (which would route back into opprof)."""
    if _unpatched_cudart is not None:
        return _unpatched_cudart()
    import torch

    return torch.cuda.cudart()


class CudaProfilerBackend(Backend):
    """cudaProfilerStart/Stop: ncu --profile-from-start off records exactly what lies between them.

    Calls the real runtime (real_cudart), also while a script's view of the API is patched, so that
    opening the window never recurses into the patched functions. cudart and check_error can be
    injected for tests.
    """

    name = "cudaProfilerStart/Stop"

    def __init__(self, cudart: Callable[[], Any] | None = None, check_error: Callable[[Any], None] | None = None):
        self._cudart = cudart or real_cudart
        if check_error is None:
            import torch

            check_error = torch.cuda.check_error
        self._check_error = check_error

    def start(self) -> None:
        self._check_error(self._cudart().cudaProfilerStart())

    def stop(self) -> None:
        self._check_error(self._cudart().cudaProfilerStop())


def process_group_marks() -> list[str]:
    """This process's torch.distributed process groups as process-group marks (contract.PROCESS_GROUP_MARK
    and the group's entry of torch.profiler's distributedInfo.pg_config as JSON); [] outside a job."""
    try:
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_initialized():
            return []
        configs = dist.distributed_c10d._get_all_pg_configs()
    except Exception as e:  # a torch without it: the collectives keep no process group
        _log(f"process groups not recorded: {type(e).__name__}: {e}")
        return []
    return [contract.PROCESS_GROUP_MARK + json.dumps(c, sort_keys=True, default=str) for c in configs]


def _nvtx_mark(text: str) -> None:
    import torch

    torch.cuda.nvtx.mark(text)


class TracerBackend(CudaProfilerBackend):
    """The window of the opprof tracer (libopprof_tracer.so injected through CUDA_INJECTION64_PATH and
    NVTX_INJECTION64_PATH): cudaProfilerStart/Stop, which the tracer records as the window's edges, and
    operator ranges (opprof.op_ranges.OperatorRanges: the torch observer, else emit_nvtx) entered for
    exactly the window's duration, so that they cover the measured iterations only. No torch.profiler: it
    cannot share the process with the tracer's CUPTI subscriber.

    At the window's start it also marks the process groups (process_group_marks), which the tracer records
    for the collectives of the window.

    emit_factory is injectable for tests; it returns a context manager (OperatorRanges() by default), and
    so is mark (torch.cuda.nvtx.mark).
    """

    name = "opprof tracer (cudaProfilerStart/Stop + operator ranges)"

    def __init__(self, cudart: Callable[[], Any] | None = None, check_error: Callable[[Any], None] | None = None,
                 emit_factory: Callable[[], Any] | None = None, mark: Callable[[str], None] = _nvtx_mark):
        super().__init__(cudart, check_error)
        self._mark = mark
        if emit_factory is None:
            from opprof.op_ranges import OperatorRanges

            emit_factory = OperatorRanges
        self._emit_factory = emit_factory
        self.operator_ranges = ""  # which source the last start() used (OperatorRanges.describe())
        self._emit: Any = None

    def start(self) -> None:
        super().start()
        for text in process_group_marks():
            self._mark(text)
        emit = self._emit_factory()
        emit.__enter__()
        self._emit = emit
        describe = getattr(emit, "describe", None)
        self.operator_ranges = describe() if describe is not None else type(emit).__name__

    def stop(self) -> None:
        emit, self._emit = self._emit, None
        try:
            if emit is not None:
                emit.__exit__(None, None, None)
        finally:
            super().stop()

    def discard(self) -> None:
        emit, self._emit = self._emit, None
        if emit is not None:
            emit.__exit__(None, None, None)


class CaptureWindow:
    """One window: opens once, closes once; synchronizes the device before each edge so the window
    holds exactly the kernels launched inside it."""

    def __init__(self, backend: Backend, sync: Callable[[], None] | None = None, clock: Callable[[], float] = time.perf_counter):
        self.backend = backend
        self.sync = sync or (lambda: None)
        self.clock = clock
        self.state = "pending"  # pending -> open -> closed
        self.opened_by = ""
        self.closed_by = ""
        self.open_time: float | None = None
        self.close_time: float | None = None

    @property
    def is_open(self) -> bool:
        return self.state == "open"

    def open(self, by: str) -> bool:
        if self.state != "pending":
            return False
        self.sync()
        self.backend.start()
        self.state = "open"
        self.opened_by = by
        self.open_time = self.clock()
        return True

    def close(self, by: str) -> bool:
        if self.state != "open":
            return False
        self.state = "closed"
        self.closed_by = by
        try:
            self.sync()  # may raise after a device error; the recording is stopped and saved regardless
        finally:
            self.close_time = self.clock()
            self.backend.stop()
        return True

    def info(self) -> dict[str, Any]:
        duration = None
        if self.open_time is not None and self.close_time is not None:
            duration = self.close_time - self.open_time
        details = {
            "backend": self.backend.name,
            "state": self.state,
            "opened_by": self.opened_by,
            "closed_by": self.closed_by,
            "open_s": duration,
        }
        operator_ranges = getattr(self.backend, "operator_ranges", "")
        if operator_ranges:
            details["operator_ranges"] = operator_ranges
        return details


class ScriptWindowPolicy:
    """The window rules for a script, driven by its calls to the CUDA profiler API (see module doc).

    backend_factory makes the window's backend; prelim_factory (pass A, mode auto) makes the recorder
    that covers the whole run until the script opens a window of its own. Both are factories so that a
    test can substitute fakes.
    """

    def __init__(
        self,
        mode: str,
        backend_factory: Callable[[], Backend],
        prelim_factory: Callable[[], Backend] | None = None,
        sync: Callable[[], None] | None = None,
    ):
        if mode not in WINDOW_MODES:
            raise ValueError(f"window mode must be one of {WINDOW_MODES}, not {mode!r}")
        self.mode = mode
        self.backend_factory = backend_factory
        self.prelim_factory = prelim_factory
        self.sync = sync or (lambda: None)
        self.window: CaptureWindow | None = None
        self.prelim: CaptureWindow | None = None
        self.script_starts = 0
        self.script_stops = 0
        self.ignored_calls = 0
        self.kind = ""

    def begin(self) -> None:
        """Before the script runs."""
        if self.mode == "whole":
            self.window = CaptureWindow(self.backend_factory(), self.sync)
            self.window.open("opprof (whole run)")
        elif self.mode == "auto" and self.prelim_factory is not None:
            self.prelim = CaptureWindow(self.prelim_factory(), self.sync)
            self.prelim.open("opprof (whole run until the script opens a window)")

    def on_script_start(self) -> bool:
        """The script called cudaProfilerStart. Returns whether a window opened."""
        self.script_starts += 1
        if self.mode == "whole" or self.window is not None:
            self.ignored_calls += 1
            if self.window is not None and self.mode != "whole":
                _log("the script opened a second profiler window: ignored (one window per capture)")
            return False
        if self.prelim is not None and self.prelim.is_open:
            _log("the script opened a profiler window: discarding the whole-run recording")
            self.prelim.backend.discard()
            self.prelim.state = "closed"
            self.prelim.closed_by = "discarded"
        self.window = CaptureWindow(self.backend_factory(), self.sync)
        self.window.open("script")
        _log("window opened by the script")
        return True

    def on_script_stop(self) -> bool:
        """The script called cudaProfilerStop. Returns whether the window closed."""
        self.script_stops += 1
        if self.mode == "whole" or self.window is None or not self.window.is_open:
            self.ignored_calls += 1
            return False
        self.window.close("script")
        _log("window closed by the script")
        return True

    def finish(self, reason: str = "exit") -> str:
        """After the script ended (reason "exit" or "error"); closes what is open, returns the kind."""
        if self.mode == "whole":
            if self.window is not None:
                self.window.close(reason)
            self.kind = KIND_WHOLE_RUN
        elif self.window is not None:
            if self.window.is_open:
                _log(f"the script's window was still open at {reason}: closing it")
                self.window.close(reason)
            self.kind = KIND_SCRIPT
        elif self.mode == "auto":
            if self.prelim is not None and self.prelim.is_open:
                self.prelim.close(reason)
            self.kind = KIND_WHOLE_RUN
        else:
            self.kind = KIND_NEVER_OPENED
        return self.kind

    def info(self) -> dict[str, Any]:
        active = self.window or self.prelim
        details = active.info() if active is not None else {"state": "never_opened"}
        details.update(
            {
                "mode": self.mode,
                "kind": self.kind,
                "script_profiler_starts": self.script_starts,
                "script_profiler_stops": self.script_stops,
                "ignored_calls": self.ignored_calls,
            }
        )
        return details


class _CudartProxy:
    """Stands in for torch.cuda.cudart(): routes cudaProfilerStart/Stop to opprof, the rest to the real
    module (fetched only when needed, so the proxy also works where CUDA is absent)."""

    def __init__(self, real_cudart: Callable[[], Any], on_start: Callable[[], Any], on_stop: Callable[[], Any]):
        self._real_cudart = real_cudart
        self._on_start = on_start
        self._on_stop = on_stop

    def cudaProfilerStart(self) -> Any:  # noqa: N802 - the CUDA runtime's name
        return self._on_start()

    def cudaProfilerStop(self) -> Any:  # noqa: N802
        return self._on_stop()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real_cudart(), name)


def cuda_success_code(real_cudart: Callable[[], Any]) -> Any:
    """What cudaProfilerStart returns on success, for callers that check it (torch.cuda.check_error)."""
    try:
        return real_cudart().cudaError.success
    except Exception:
        return 0


def patch_cuda_profiler_api(on_start: Callable[[], Any], on_stop: Callable[[], Any]) -> Callable[[], None]:
    """Routes the script-visible CUDA profiler API to on_start/on_stop; returns a function that undoes it.

    Patched: torch.cuda.profiler.start/stop (and so torch.cuda.profiler.profile(), which calls them),
    torch.cuda.cudart (so torch.cuda.cudart().cudaProfilerStart() is routed) and the cudart name that
    torch.cuda.profiler imported. on_start/on_stop return what the CUDA call should return. A script
    that calls libcudart through ctypes bypasses this.
    """
    global _unpatched_cudart
    import torch
    import torch.cuda.profiler as cuda_profiler

    if _unpatched_cudart is not None:
        raise RuntimeError("the CUDA profiler API is already patched by opprof")
    originals = {
        (torch.cuda, "cudart"): torch.cuda.cudart,
        (cuda_profiler, "cudart"): getattr(cuda_profiler, "cudart", None),
        (cuda_profiler, "start"): cuda_profiler.start,
        (cuda_profiler, "stop"): cuda_profiler.stop,
    }
    _unpatched_cudart = torch.cuda.cudart
    proxy = _CudartProxy(_unpatched_cudart, on_start, on_stop)

    def patched_cudart() -> Any:
        return proxy

    def patched_start() -> None:
        on_start()

    def patched_stop() -> None:
        on_stop()

    patched_start.__doc__ = "opprof: opens the capture window (see opprof.window)."
    patched_stop.__doc__ = "opprof: closes the capture window (see opprof.window)."
    torch.cuda.cudart = patched_cudart
    if originals[(cuda_profiler, "cudart")] is not None:
        cuda_profiler.cudart = patched_cudart
    cuda_profiler.start = patched_start
    cuda_profiler.stop = patched_stop

    def undo() -> None:
        global _unpatched_cudart
        for (owner, name), value in originals.items():
            if value is not None:
                setattr(owner, name, value)
        _unpatched_cudart = None

    return undo
