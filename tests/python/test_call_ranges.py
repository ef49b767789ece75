"""Module ranges through sys.monitoring (opprof.call_ranges and the opprof_call_ranges extension).

The extension needs CPython >= 3.12. The build compiles it for the workload's Python (build/agents/call_ranges/) and,
where that one is older, for another 3.12+ interpreter on the machine (build/agents/call_ranges/test/); each holds
interpreter.txt. The end-to-end tests run a small program with that interpreter under the tracer's NVTX
injection (no torch needed: the watched function is a stand-in for Module._call_impl) and read the tracer's
log with opprof_trace_dump. The loader's choices are tested in this interpreter."""

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import PYTHON_DIR, REPO
from opprof import call_ranges

BUILD = REPO / "build"
TRACER = BUILD / "agents" / "tracer" / "libopprof_tracer.so"
DUMP = BUILD / "agents" / "tracer" / "opprof_trace_dump"


@pytest.fixture
def fresh_loader(monkeypatch):
    """call_ranges loads once per process: each test starts from nothing loaded."""
    monkeypatch.setattr(call_ranges, "_extension", None)
    monkeypatch.setattr(call_ranges, "_extension_error", None)
    return call_ranges


def test_candidate_paths_follow_the_explicit_directory_else_the_tracer(tmp_path):
    name = call_ranges.extension_filename()
    assert name.startswith("opprof_call_ranges") and name.endswith(".so")
    tracer = tmp_path / "build" / "agents" / "tracer" / "libopprof_tracer.so"
    assert call_ranges.candidate_paths({"NVTX_INJECTION64_PATH": str(tracer)}) == [
        tmp_path / "build" / "agents" / "call_ranges" / name, tmp_path / "build" / "agents" / "tracer" / name]
    explicit = {call_ranges.ENV_DIR: "/somewhere", "NVTX_INJECTION64_PATH": str(tracer)}
    assert call_ranges.candidate_paths(explicit) == [call_ranges.Path("/somewhere") / name]
    assert call_ranges.candidate_paths({}) == []


def test_the_loader_says_why_it_has_no_extension(fresh_loader, tmp_path):
    extension, reason = fresh_loader.load_extension({fresh_loader.ENV_DIR: str(tmp_path)})
    assert extension is None
    if sys.version_info < (3, 12):
        assert "needs CPython >= 3.12" in reason
    else:
        assert f"{fresh_loader.ENV_DIR}={tmp_path} holds no" in reason
    # The answer is kept: a later call with another environment does not load either.
    assert fresh_loader.load_extension({})[1] == reason


def test_module_ranges_fall_back_to_forward_wrappers_without_the_extension(fresh_loader, tmp_path):
    torch = pytest.importorskip("torch")
    from opprof.hooks import ModuleForwardRanges

    fresh_loader.load_extension({fresh_loader.ENV_DIR: str(tmp_path)})
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    ranges, reason = fresh_loader.module_ranges_for(model)
    assert isinstance(ranges, ModuleForwardRanges) and ranges.method == "forward_wrappers"
    assert reason


# -- the extension itself, in a CPython >= 3.12 ---------------------------------------------------------------

def _extension_builds():
    """(interpreter, directory) for each build of the extension under build/agents/call_ranges/."""
    found = []
    for directory in (BUILD / "agents" / "call_ranges", BUILD / "agents" / "call_ranges" / "test"):
        marker = directory / "interpreter.txt"
        if marker.is_file() and list(directory.glob("opprof_call_ranges*.so")):
            found.append((marker.read_text().strip(), directory))
    return found


def _extension_build():
    builds = _extension_builds()
    if not builds or not (TRACER.is_file() and DUMP.is_file()):
        pytest.skip("build/ has no opprof_call_ranges for a CPython >= 3.12, or no tracer (make build)")
    return builds[0]


_PROGRAM = textwrap.dedent("""
    import sys, threading
    from opprof.call_ranges import CallRanges, load_extension

    class Module:  # the shape of torch.nn.Module: __call__ -> _call_impl(self, ...) -> forward
        def __call__(self, *args, **kwargs):
            return self._call_impl(*args, **kwargs)
        def _call_impl(self, *args, **kwargs):
            return self.forward(*args, **kwargs)

    class Leaf(Module):
        def forward(self, x, scale=1):
            return x * scale

    class Fails(Module):
        def forward(self, x):
            raise ValueError("forward failed")

    class Unhashable(Leaf):
        def __eq__(self, other):  # sets __hash__ to None: such an object cannot be a dict key
            return self is other

    class Root(Module):
        def __init__(self):
            self.a, self.b, self.fails, self.stranger = Unhashable(), Leaf(), Fails(), Leaf()
        def forward(self, x):
            try:
                self.fails(x)
            except ValueError:
                pass
            return self.b(self.a(x), scale=2) + self.stranger(x)

    root = Root()
    names = [(root, "nn.Module: Root"), (root.a, "nn.Module: a"), (root.b, "nn.Module: b"),
             (root.fails, "nn.Module: fails")]
    extension, reason = load_extension()
    assert extension is not None, reason
    root(1)  # before: nothing recorded
    ranges = CallRanges(Module._call_impl.__code__, names)
    with ranges:
        assert root(1) == 3
        try:
            CallRanges(Module._call_impl.__code__, names).install()
        except RuntimeError as exc:
            print("second watch refused:", exc)
        worker = threading.Thread(target=lambda: root.a(3))
        worker.start(); worker.join()
        assert extension.open_calls() == 0
    root(1)  # after: nothing recorded
    assert not ranges.installed
    # A watch that ends inside a watched call closes that call's range itself.
    class Stopper(Module):
        def forward(self):
            return ranges2.uninstall()
    stopper = Stopper()
    ranges2 = CallRanges(Module._call_impl.__code__, {stopper: "nn.Module: stopper"})
    ranges2.install()
    stopper()
    print("done")
""")


def _run_program(interpreter, directory, tmp_path):
    log = tmp_path / "trace.opprof"
    env = dict(os.environ)
    env.update({"NVTX_INJECTION64_PATH": str(TRACER), "OPPROF_TRACE_FILE": str(log),
                call_ranges.ENV_DIR: str(directory), "PYTHONPATH": str(PYTHON_DIR)})
    done = subprocess.run([interpreter, "-c", _PROGRAM], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    dump = subprocess.run([str(DUMP), str(log), "--first", "100000"], capture_output=True, text=True, timeout=60)
    assert dump.returncode == 0, dump.stderr
    return done.stdout, dump.stdout.splitlines()


@pytest.mark.slow
def test_watched_calls_get_ranges_named_by_their_first_argument(tmp_path):
    interpreter, directory = _extension_build()
    stdout, lines = _run_program(interpreter, directory, tmp_path)
    assert "second watch refused: opprof call ranges already watch another function" in stdout
    assert stdout.rstrip().endswith("done")
    pushes = sorted((int(line.split(" ts=")[1]), line.split('"')[1], line.split("tid=")[1].split()[0])
                    for line in lines if line.startswith("first: push "))
    # Only calls inside the watch, in call order; the unnamed module (stranger) gets none; the failing
    # forward's range closes on unwind; the worker thread's call gets its own range.
    assert [text for _, text, _ in pushes] == ["nn.Module: Root", "nn.Module: fails", "nn.Module: a", "nn.Module: b",
                                               "nn.Module: a", "nn.Module: stopper"]
    assert sum(line.startswith("first: nvtx_pop") for line in lines) == len(pushes)
    assert len({tid for _, _, tid in pushes}) == 2  # main thread and worker
    summary = next(line for line in lines if line.startswith("timeline "))
    assert " module=6" in summary


_BAD_INPUT_PROGRAM = textwrap.dedent("""
    from opprof.call_ranges import load_extension
    extension, reason = load_extension()
    assert extension is not None, reason
    def takes_nothing(*args): pass
    def takes_self(self): pass
    for code, names in ((takes_nothing.__code__, []), (takes_self.__code__, [1]), (takes_self.__code__, [(1, 2)]),
                        (takes_self.__code__, 5), ("not code", [])):
        try:
            extension.watch(code, names)
            print("accepted")
        except (TypeError, ValueError) as exc:
            print(type(exc).__name__, exc)
    print("open", extension.open_calls(), "unwatched", extension.unwatch())
""")


@pytest.mark.slow
def test_bad_watch_arguments_raise_python_errors(tmp_path):
    interpreter, directory = _extension_build()
    env = dict(os.environ, **{call_ranges.ENV_DIR: str(directory), "PYTHONPATH": str(PYTHON_DIR)})
    done = subprocess.run([interpreter, "-c", _BAD_INPUT_PROGRAM], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["ValueError watch(): the code object has no positional parameter to name its calls by",
                         "TypeError watch(): each name must be an (object, str) pair"]
    assert lines[2].startswith("TypeError ")  # a text that is not a str: CPython's own message
    assert lines[3:] == ["TypeError watch(): names must be a sequence of (object, str) pairs",
                         "TypeError watch() argument 1 must be code, not str",
                         "open 0 unwatched 0"]


@pytest.mark.slow
def test_ranges_nest_as_the_calls_do(tmp_path):
    interpreter, directory = _extension_build()
    _, lines = _run_program(interpreter, directory, tmp_path)
    # The log holds each thread's records in blocks (one per buffer written): a pop belongs to the thread of
    # the push before it.
    depth: dict[str, int] = {}
    seen, tid = [], None
    for line in lines:
        if line.startswith("first: push "):
            tid = line.split("tid=")[1].split()[0]
            seen.append((depth.get(tid, 0), line.split('"')[1]))
            depth[tid] = depth.get(tid, 0) + 1
        elif line.startswith("first: nvtx_pop"):
            depth[tid] -= 1
    assert sorted(set(seen)) == [(0, "nn.Module: Root"), (0, "nn.Module: a"), (0, "nn.Module: stopper"),
                                 (1, "nn.Module: a"), (1, "nn.Module: b"), (1, "nn.Module: fails")]
    assert set(depth.values()) == {0}
