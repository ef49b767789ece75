"""Operator ranges for the tracer backend (opprof.op_ranges) and module ranges from forward wrappers
(opprof.hooks.ModuleForwardRanges), on the CPU. With the project built (make build), the observer library
runs for real under the tracer's NVTX injection and the tracer's log is checked with opprof_trace_dump."""

import inspect
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from torch import nn

from conftest import PYTHON_DIR, REPO
from opprof import op_ranges
from opprof.hooks import ModuleForwardRanges

BUILD = REPO / "build"
TRACER = BUILD / "agents" / "tracer" / "libopprof_tracer.so"
OBSERVER = BUILD / "agents" / "torch_observer" / op_ranges.LIBRARY_NAME
DUMP = BUILD / "agents" / "tracer" / "opprof_trace_dump"


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, scale: float = 1.0):
        return self.fc(x) * scale


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.inner(x))


class Recorder:
    def __init__(self):
        self.events = []

    def push(self, text):
        self.events.append(("push", text))

    def pop(self):
        self.events.append(("pop",))


def test_forward_wrappers_nest_module_ranges_in_call_order():
    model, rec = Outer(), Recorder()
    with ModuleForwardRanges(model, rec.push, rec.pop) as ranges:
        assert ranges.modules_wrapped == 4
        model(torch.randn(2, 4))
    assert rec.events == [
        ("push", "nn.Module: Outer"),
        ("push", "nn.Module: inner"),
        ("push", "nn.Module: inner.fc"),
        ("pop",),
        ("pop",),
        ("push", "nn.Module: act"),
        ("pop",),
        ("pop",),
    ]


def test_forward_wrappers_keep_signatures_and_close_ranges_when_forward_raises():
    model, rec = Outer(), Recorder()
    with ModuleForwardRanges(model, rec.push, rec.pop):
        assert list(inspect.signature(model.inner.forward).parameters) == ["x", "scale"]
        with pytest.raises(RuntimeError):
            model(torch.randn(2, 5))  # wrong width: fc raises
    pushes = sum(1 for e in rec.events if e[0] == "push")
    pops = sum(1 for e in rec.events if e[0] == "pop")
    assert pushes == pops == 3


def test_uninstall_restores_every_forward_including_a_patched_one():
    model, rec = Outer(), Recorder()
    patched = lambda x: x  # noqa: E731 - a forward the user set on the instance before profiling
    model.act.forward = patched
    ranges = ModuleForwardRanges(model, rec.push, rec.pop).install()
    assert "forward" in model.inner.__dict__
    ranges.uninstall()
    assert "forward" not in model.inner.__dict__ and "forward" not in model.__dict__
    assert model.act.forward is patched
    rec.events.clear()
    model(torch.randn(2, 4))
    assert rec.events == []


def test_operator_ranges_fall_back_to_emit_nvtx_and_say_why(monkeypatch):
    monkeypatch.setattr(op_ranges, "_library", None)
    monkeypatch.setattr(op_ranges, "_library_error", None)
    entered = []

    class FakeEmit:
        def __enter__(self):
            entered.append("enter")

        def __exit__(self, *exc):
            entered.append("exit")

    env = {op_ranges.ENV_LIBRARY: "/nonexistent/libopprof_torch_observer.so"}
    with op_ranges.OperatorRanges(environ=env, emit_factory=FakeEmit) as ranges:
        assert ranges.source == "emit_nvtx"
    assert entered == ["enter", "exit"]
    assert "/nonexistent/libopprof_torch_observer.so" in ranges.describe()
    assert "names no file" in ranges.fallback_reason


def test_candidate_paths_follow_the_injected_tracer(tmp_path):
    tracer = tmp_path / "build" / "agents" / "tracer" / "libopprof_tracer.so"
    paths = op_ranges.candidate_paths({"NVTX_INJECTION64_PATH": str(tracer)})
    assert paths[0] == tmp_path / "build" / "agents" / "torch_observer" / op_ranges.LIBRARY_NAME
    assert paths[1] == tmp_path / "build" / "agents" / "tracer" / op_ranges.LIBRARY_NAME
    assert op_ranges.candidate_paths({op_ranges.ENV_LIBRARY: "/x.so", "NVTX_INJECTION64_PATH": str(tracer)}) == [
        op_ranges.Path("/x.so")]


_OBSERVER_PROGRAM = textwrap.dedent("""
    import torch
    from torch import nn
    from opprof.op_ranges import OperatorRanges
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    model(torch.randn(2, 8))  # outside: not recorded
    with OperatorRanges() as ranges:
        assert ranges.source == "observer", ranges.describe()
        with torch.autograd.profiler.record_function("my_step"):
            model(torch.randn(2, 8))
    model(torch.randn(2, 8))  # after: not recorded
""")


def _trace_observer_program(tmp_path, program=_OBSERVER_PROGRAM, **env_extra):
    """Runs `program` (default _OBSERVER_PROGRAM) on the CPU under the tracer's NVTX injection; the dump's push
    lines and summary."""
    if not (TRACER.is_file() and OBSERVER.is_file() and DUMP.is_file()):
        pytest.skip("build/ has no tracer or observer (make build where CUPTI and torch are installed)")
    log = tmp_path / "trace.opprof"
    env = dict(os.environ)
    env.update({"NVTX_INJECTION64_PATH": str(TRACER), "OPPROF_TRACE_FILE": str(log),
                "OPPROF_TORCH_OBSERVER_LIB": str(OBSERVER), "PYTHONPATH": str(PYTHON_DIR), **env_extra})
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True,
                          timeout=120)
    if "was built for torch" in done.stderr:
        pytest.skip("build/'s observer was built against another torch")
    assert done.returncode == 0, done.stderr
    dump = subprocess.run([str(DUMP), str(log), "--first", "100000"], capture_output=True, text=True, timeout=60)
    assert dump.returncode == 0, dump.stderr
    pushes = [line for line in dump.stdout.splitlines() if line.startswith("first: push ")]
    summary = next(line for line in dump.stdout.splitlines() if line.startswith("timeline "))
    return pushes, summary


@pytest.mark.slow
def test_observer_records_operators_and_record_function_ranges_through_the_tracer(tmp_path):
    # Deferral off: every operator range is written, launch or not.
    pushes, summary = _trace_observer_program(tmp_path, OPPROF_TRACE_DEFER_OPERATORS="0")
    texts = [line.split('"')[1] for line in pushes if 'domain="opprof.torch"' in line]
    assert "my_step" in texts and "aten::linear" in texts and "aten::relu" in texts
    assert texts.count("aten::linear") == 1  # only the call inside the context
    assert " annotation=1" in summary  # my_step: a record_function range
    assert " operator=" in summary


@pytest.mark.slow
def test_the_tracer_drops_operator_ranges_that_launch_nothing(tmp_path):
    # By default the tracer writes an observer range only when a launch happens inside it; on the CPU
    # nothing launches, so none of the operators (nor my_step, which the observer reports too) is written.
    pushes, summary = _trace_observer_program(tmp_path)
    assert not [line for line in pushes if 'domain="opprof.torch"' in line], pushes
    assert " operator=" not in summary and " annotation=" not in summary


_EMPTY_CALLBACK_PROGRAM = textwrap.dedent("""
    import torch
    from torch import nn
    from opprof.op_ranges import load_observer
    observer, reason = load_observer()
    assert observer is not None, reason
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    assert observer.enable(empty=True)
    assert not observer.enable()  # one callback at a time: the empty one is on
    model(torch.randn(2, 8))
    observer.disable()
    assert observer.enable()  # disable removed it
    observer.disable()
""")


@pytest.mark.slow
def test_the_empty_callback_records_no_ranges(tmp_path):
    # Deferral off, so a range pushed by mistake would be written.
    pushes, summary = _trace_observer_program(tmp_path, _EMPTY_CALLBACK_PROGRAM, OPPROF_TRACE_DEFER_OPERATORS="0")
    assert not [line for line in pushes if 'domain="opprof.torch"' in line], pushes
    assert " operator=" not in summary


_AUTOGRAD_PROGRAM = textwrap.dedent("""
    import torch
    from torch import nn
    from opprof.op_ranges import load_observer
    observer, reason = load_observer()
    assert observer is not None, reason
    model = nn.Linear(8, 8)
    x = torch.randn(2, 8)
    assert observer.enable()
    model(x).sum().backward()
    observer.disable()
""")


@pytest.mark.slow
def test_observer_payload_links_backward_nodes_to_their_forward_operators(tmp_path):
    # The payload (agents/tracer_log/format.hpp, encode_autograd_link): sequence number + 1 in the high 24 bits, the
    # forward thread's RecordFunction id in the low 8 (0 on forward operators).
    pushes, _ = _trace_observer_program(tmp_path, _AUTOGRAD_PROGRAM, OPPROF_TRACE_DEFER_OPERATORS="0")
    payload = {}
    for line in pushes:
        if 'domain="opprof.torch"' in line:
            payload.setdefault(line.split('"')[1], int(line.split(" payload=")[1].split()[0]))
    forward = payload["aten::addmm"]
    # The node's own range carries the link; the engine's evaluate_function range around it has none.
    backward = payload["AddmmBackward0"]
    assert payload["autograd::engine::evaluate_function: AddmmBackward0"] == 0
    assert forward != 0 and forward & 0xFF == 0
    assert backward & 0xFF != 0, "a backward node names its forward thread"
    assert backward >> 8 == forward >> 8, "the node carries its forward operator's sequence number"
