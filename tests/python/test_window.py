"""Capture-window rules with fake backends: the same rules drive torch.profiler in pass A and
cudaProfilerStart/Stop in pass B, so testing them with fakes covers the GPU-only half too."""

import pytest
import torch

from opprof.window import (
    Backend,
    CaptureWindow,
    ScriptWindowPolicy,
    cuda_success_code,
    patch_cuda_profiler_api,
)


class FakeBackend(Backend):
    def __init__(self, log, name):
        self.log = log
        self.name = name

    def start(self):
        self.log.append(f"{self.name}.start")

    def stop(self):
        self.log.append(f"{self.name}.stop")

    def discard(self):
        self.log.append(f"{self.name}.discard")


def make_policy(mode, with_prelim):
    log = []
    counter = iter(range(100))
    policy = ScriptWindowPolicy(
        mode,
        backend_factory=lambda: FakeBackend(log, f"window{next(counter)}"),
        prelim_factory=(lambda: FakeBackend(log, "prelim")) if with_prelim else None,
        sync=lambda: log.append("sync"),
    )
    return policy, log


def test_window_opens_and_closes_once_with_syncs():
    log = []
    window = CaptureWindow(FakeBackend(log, "w"), sync=lambda: log.append("sync"))
    assert window.open("opprof") and not window.open("again")
    assert window.close("opprof") and not window.close("again")
    assert log == ["sync", "w.start", "sync", "w.stop"]
    info = window.info()
    assert info["state"] == "closed" and info["opened_by"] == "opprof" and info["open_s"] >= 0


def test_window_stops_the_backend_even_when_sync_fails():
    log = []

    def failing_sync():
        if log:
            raise RuntimeError("CUDA error: device-side assert")

    window = CaptureWindow(FakeBackend(log, "w"), sync=failing_sync)
    window.open("opprof")
    with pytest.raises(RuntimeError):
        window.close("error")
    assert log == ["w.start", "w.stop"] and window.state == "closed"


# Pass A (timeline) with --window auto: a whole-run recording until the script opens its own window.
def test_timeline_auto_script_window_replaces_the_whole_run():
    policy, log = make_policy("auto", with_prelim=True)
    policy.begin()
    assert policy.on_script_start()
    assert not policy.on_script_start()  # a second start while open: ignored
    assert policy.on_script_stop()
    assert not policy.on_script_start()  # a second window: ignored, in both passes alike
    assert not policy.on_script_stop()
    assert policy.finish() == "script"
    assert log == ["sync", "prelim.start", "prelim.discard", "sync", "window0.start", "sync", "window0.stop"]
    info = policy.info()
    assert info["script_profiler_starts"] == 3 and info["script_profiler_stops"] == 2 and info["ignored_calls"] == 3


def test_timeline_auto_without_script_window_records_the_whole_run():
    policy, log = make_policy("auto", with_prelim=True)
    policy.begin()
    assert policy.finish() == "whole_run"
    assert log == ["sync", "prelim.start", "sync", "prelim.stop"]


def test_window_left_open_is_closed_at_exit():
    policy, log = make_policy("auto", with_prelim=True)
    policy.begin()
    policy.on_script_start()
    assert policy.finish("error") == "script"
    assert log[-1] == "window0.stop" and policy.window.closed_by == "error"


def test_script_mode_window_that_never_opens():
    policy, log = make_policy("script", with_prelim=False)
    policy.begin()
    assert not policy.on_script_stop()  # a stop without a start is ignored
    assert policy.finish() == "never_opened"
    assert log == []
    assert policy.info()["state"] == "never_opened"


def test_whole_mode_ignores_the_scripts_calls():
    policy, log = make_policy("whole", with_prelim=False)
    policy.begin()
    assert not policy.on_script_start() and not policy.on_script_stop()
    assert policy.finish() == "whole_run"
    assert log == ["sync", "window0.start", "sync", "window0.stop"]


# Pass B (counters): no preliminary recording; the window's backend is cudaProfilerStart/Stop.
def test_counters_auto_forwards_the_first_window_only():
    policy, log = make_policy("auto", with_prelim=False)
    policy.begin()
    assert log == []
    policy.on_script_start()
    policy.on_script_stop()
    policy.on_script_start()
    policy.on_script_stop()
    assert policy.finish() == "script"
    assert log == ["sync", "window0.start", "sync", "window0.stop"]


def test_counters_auto_without_window_reports_whole_run():
    policy, log = make_policy("auto", with_prelim=False)
    policy.begin()
    assert policy.finish() == "whole_run" and log == []


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError):
        ScriptWindowPolicy("sometimes", Backend)


def test_cuda_profiler_api_is_routed_and_restored():
    calls = []
    original = (torch.cuda.profiler.start, torch.cuda.profiler.stop, torch.cuda.cudart)
    undo = patch_cuda_profiler_api(lambda: calls.append("start") or 0, lambda: calls.append("stop") or 0)
    try:
        torch.cuda.profiler.start()
        torch.cuda.profiler.stop()
        with torch.cuda.profiler.profile():  # calls the module's start/stop
            calls.append("body")
        assert torch.cuda.cudart().cudaProfilerStart() == 0
        assert torch.cuda.cudart().cudaProfilerStop() == 0
        from torch.cuda import profiler as imported_later  # a script importing after the patch

        imported_later.start()
    finally:
        undo()
    assert calls == ["start", "stop", "start", "body", "stop", "start", "stop", "start"]
    assert (torch.cuda.profiler.start, torch.cuda.profiler.stop, torch.cuda.cudart) == original


def test_success_code_without_cuda_is_zero():
    def no_cudart():
        raise AssertionError("Torch not compiled with CUDA enabled")

    assert cuda_success_code(no_cudart) == 0


class FakeCudart:
    """Stands in for torch.cuda.cudart() (torch._C._cudart) on a machine without CUDA."""

    def __init__(self):
        self.calls = []

    def cudaProfilerStart(self):  # noqa: N802
        self.calls.append("cudaProfilerStart")
        return 0

    def cudaProfilerStop(self):  # noqa: N802
        self.calls.append("cudaProfilerStop")
        return 0


def test_pass_b_script_window_reaches_the_real_runtime_once(monkeypatch):
    """Pass B for a script: the script's torch.cuda.profiler.start()/stop() must reach the real
    cudaProfilerStart/Stop exactly once each, not the patched proxy (which would recurse)."""
    from opprof.window import CudaProfilerBackend

    fake = FakeCudart()
    monkeypatch.setattr(torch.cuda, "cudart", lambda: fake)
    policy = ScriptWindowPolicy("auto", backend_factory=lambda: CudaProfilerBackend(check_error=lambda result: None))
    undo = patch_cuda_profiler_api(
        lambda: policy.on_script_start() and 0, lambda: policy.on_script_stop() and 0
    )
    try:
        policy.begin()
        torch.cuda.profiler.start()  # what the script does
        torch.cuda.cudart().cudaProfilerStart()  # a second start: ignored
        torch.cuda.profiler.stop()
        assert policy.finish() == "script"
    finally:
        undo()
    assert fake.calls == ["cudaProfilerStart", "cudaProfilerStop"]
    assert torch.cuda.cudart() is fake  # restored to what it was before the patch
