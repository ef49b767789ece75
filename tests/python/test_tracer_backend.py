"""The tracer backend's Python side on the CPU: module ranges through an emitter (NVTX in real runs, a fake
here), the window that brackets emit_nvtx with cudaProfilerStart/Stop, and the capture's refusal to run
without the injected library."""

import pytest
import torch
from torch import nn

from conftest import EXAMPLES_DIR, run_capture
from opprof.hooks import ModuleRangeHooks, NvtxEmitter, RecordFunctionEmitter
from opprof.window import CaptureWindow, TracerBackend


class FakeEmitter:
    """Records enter/exit calls like NVTX push/pop would see them."""

    def __init__(self):
        self.events = []
        self.depth = 0

    def enter(self, text):
        self.events.append(("push", text, self.depth))
        self.depth += 1
        return text

    def exit(self, token):
        self.depth -= 1
        self.events.append(("pop", token, self.depth))


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.inner(x))


def test_hooks_push_and_pop_module_ranges_through_the_emitter():
    model = Outer()
    emitter = FakeEmitter()
    with ModuleRangeHooks(model, emitter) as hooks:
        model(torch.randn(2, 4))
    assert emitter.events == [
        ("push", "nn.Module: Outer", 0),
        ("push", "nn.Module: inner", 1),
        ("push", "nn.Module: inner.fc", 2),
        ("pop", "nn.Module: inner.fc", 2),
        ("pop", "nn.Module: inner", 1),
        ("push", "nn.Module: act", 1),
        ("pop", "nn.Module: act", 1),
        ("pop", "nn.Module: Outer", 0),
    ]
    assert hooks.ranges_opened == 4
    assert emitter.depth == 0


def test_ranges_left_open_by_an_exception_are_popped_in_order():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    model = nn.Sequential(nn.Linear(4, 4), Boom())
    emitter = FakeEmitter()
    with ModuleRangeHooks(model, emitter):
        with pytest.raises(ValueError):
            model(torch.randn(2, 4))
    assert emitter.depth == 0  # every push had its pop, innermost first
    pops = [text for kind, text, _ in emitter.events if kind == "pop"]
    assert pops[-1] == "nn.Module: Sequential"


def test_default_emitter_is_record_function():
    assert isinstance(ModuleRangeHooks().emitter, RecordFunctionEmitter)


def test_nvtx_emitter_is_a_no_op_without_cuda():
    emitter = NvtxEmitter()
    if torch.cuda.is_available():
        pytest.skip("a CUDA build: NVTX is live here")
    assert not emitter.active
    token = emitter.enter("nn.Module: x")  # must not raise on a CPU-only build
    emitter.exit(token)


class FakeCudart:
    def __init__(self, calls):
        self.calls = calls

    def cudaProfilerStart(self):  # noqa: N802
        self.calls.append("cudaProfilerStart")
        return 0

    def cudaProfilerStop(self):  # noqa: N802
        self.calls.append("cudaProfilerStop")
        return 0


class FakeEmitNvtx:
    def __init__(self, calls):
        self.calls = calls

    def __enter__(self):
        self.calls.append("emit_nvtx enter")
        return self

    def __exit__(self, *exc):
        self.calls.append("emit_nvtx exit")
        return False


def test_tracer_window_brackets_emit_nvtx_with_profiler_start_stop():
    calls = []
    backend = TracerBackend(cudart=lambda: FakeCudart(calls), check_error=lambda result: None,
                            emit_factory=lambda: FakeEmitNvtx(calls))
    window = CaptureWindow(backend, sync=lambda: calls.append("sync"))
    window.open("test")
    calls.append("work")
    window.close("test")
    # emit_nvtx covers the work only; the profiler window encloses it.
    start = calls.index("cudaProfilerStart")
    assert calls.index("emit_nvtx enter") == start + 1
    assert calls.index("emit_nvtx enter") < calls.index("work") < calls.index("emit_nvtx exit")
    assert calls.index("emit_nvtx exit") < calls.index("cudaProfilerStop")


def test_tracer_window_stops_the_profiler_even_if_emit_nvtx_fails_to_exit():
    calls = []

    class Failing(FakeEmitNvtx):
        def __exit__(self, *exc):
            raise RuntimeError("exit failed")

    backend = TracerBackend(cudart=lambda: FakeCudart(calls), check_error=lambda result: None,
                            emit_factory=lambda: Failing(calls))
    backend.start()
    with pytest.raises(RuntimeError):
        backend.stop()
    assert calls[-1] == "cudaProfilerStop"


@pytest.mark.slow
def test_capture_with_tracer_backend_needs_the_injected_library(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_INJECTION64_PATH", raising=False)
    monkeypatch.delenv("NVTX_INJECTION64_PATH", raising=False)
    out = tmp_path / "cap"
    result = run_capture(["--pass", "timeline", "--backend", "tracer", "--out", out, "--workload",
                          EXAMPLES_DIR / "mlp.py", "--device", "cpu"])
    assert result.returncode == 2
    assert "CUDA_INJECTION64_PATH" in result.stderr


def test_tracer_window_marks_the_process_groups_at_its_start(tmp_path):
    """Under torch.distributed, the window's start marks each process group (contract.PROCESS_GROUP_MARK and
    torch.profiler's pg_config entry as JSON), before the operator ranges begin; outside a job it marks none."""
    import json

    import torch.distributed as dist

    from opprof import contract
    from opprof.window import process_group_marks

    assert process_group_marks() == []
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        calls = []
        backend = TracerBackend(cudart=lambda: FakeCudart(calls), check_error=lambda result: None,
                                emit_factory=lambda: FakeEmitNvtx(calls), mark=lambda text: calls.append(text))
        backend.start()
        backend.stop()
    finally:
        dist.destroy_process_group()
    marks = [c for c in calls if c.startswith(contract.PROCESS_GROUP_MARK)]
    assert len(marks) == 1
    group = json.loads(marks[0][len(contract.PROCESS_GROUP_MARK):])
    assert group["pg_name"] == "0" and group["pg_size"] == 1 and group["ranks"] == [0]
    assert calls.index(marks[0]) < calls.index("emit_nvtx enter")
