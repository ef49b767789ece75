"""``python -m opprof.capture`` end to end on the CPU (pass A), and its failure paths.

Pass B needs CUDA and ncu; its window logic is covered with fakes in test_window.py, and here only its
refusal to run without CUDA (without writing to stdout, where ncu's CSV would go).
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import EXAMPLES_DIR, PYTHON_DIR, run_capture, user_annotations

pytestmark = pytest.mark.slow


def read_json(path):
    return json.loads(path.read_text())


def assert_nested(events):
    """Ranges on one thread are either disjoint or nested."""
    for a in events:
        for b in events:
            if a is b or a["tid"] != b["tid"]:
                continue
            a0, a1, b0, b1 = a["ts"], a["ts"] + a["dur"], b["ts"], b["ts"] + b["dur"]
            overlap = min(a1, b1) - max(a0, b0)
            if overlap > 1e-3:
                assert (a0 <= b0 + 1e-3 and b1 <= a1 + 1e-3) or (b0 <= a0 + 1e-3 and a1 <= b1 + 1e-3), (a, b)


def test_eager_mlp_timeline(tmp_path):
    out = tmp_path / "cap"
    result = run_capture(["--pass", "timeline", "--out", out, "--workload", EXAMPLES_DIR / "mlp.py",
                          "--compile", "eager", "--device", "cpu", "--warmup", "1", "--iters", "2"])
    assert result.returncode == 0, result.stderr
    assert "[opprof.capture" in result.stderr and "[opprof.capture" not in result.stdout

    events = user_annotations(out / "trace.json")
    names = [e["name"] for e in events]
    assert names.count("nn.Module: MLP") == 2  # exactly the measured iterations: warm-up is outside
    assert names[:5] == ["nn.Module: MLP", "nn.Module: blocks.0", "nn.Module: blocks.0.fc",
                         "nn.Module: blocks.0.act", "nn.Module: blocks.0.norm"]
    assert names.count("nn.Module: head") == 2
    assert_nested(events)

    capture = read_json(out / "capture.json")
    assert capture["status"] == "ok" and capture["exit_code"] == 0
    assert capture["pass"] == "timeline" and capture["mode"] == "workload" and capture["compile"] == "eager"
    assert (capture["warmup"], capture["iters"], capture["train"]) == (1, 2, False)
    assert capture["window"] == "workload" and capture["window_info"]["closed_by"] == "opprof"
    assert capture["versions"]["torch"] and capture["versions"]["python"]
    assert capture["device"]["type"] == "cpu"
    assert capture["wall_s"]["warmup"] > 0 and capture["wall_s"]["measured"] > 0
    assert capture["artifacts"]["trace"] == "trace.json"
    assert capture["module_ranges"]["roots"] == ["MLP"] and capture["module_ranges"]["ranges_opened"] > 0
    assert capture["environment"]["TORCH_COMPILE_DEBUG"] == "1"
    assert capture["environment"]["TORCHINDUCTOR_CACHE_DIR"] == str(out / "cache" / "inductor")
    assert capture["error"] is None


CRASHING_WORKLOAD = """
import torch
from torch import nn

class Fails(nn.Module):
    calls = 0
    def forward(self, x):
        Fails.calls += 1
        if Fails.calls == 3:
            raise RuntimeError("simulated failure in call 3")
        return x * 2

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pre = nn.Linear(4, 4)
        self.fails = Fails()
    def forward(self, x):
        return self.fails(self.pre(x))

def get_model_and_input(device="cpu"):
    return Model().to(device).eval(), (torch.randn(2, 4, device=device),)
"""


def test_crash_in_the_window_keeps_the_trace_and_records_the_error(tmp_path):
    workload = tmp_path / "crashing.py"
    workload.write_text(CRASHING_WORKLOAD)
    out = tmp_path / "cap"
    result = run_capture(["--pass", "timeline", "--out", out, "--workload", workload,
                          "--device", "cpu", "--warmup", "1", "--iters", "3"])
    assert result.returncode == 1, result.stderr
    assert "simulated failure in call 3" in result.stderr

    names = [e["name"] for e in user_annotations(out / "trace.json")]
    # Measured call 1 ran whole; call 2 (the third overall) failed inside "fails": its ranges closed.
    assert names == ["nn.Module: Model", "nn.Module: pre", "nn.Module: fails"] * 2

    capture = read_json(out / "capture.json")
    assert capture["status"] == "error" and capture["exit_code"] == 1
    assert capture["error"]["type"] == "RuntimeError"
    assert capture["error"]["phase"] == "measured"
    assert "simulated failure" in capture["error"]["message"] and "Traceback" in capture["error"]["traceback"]
    assert capture["window_info"]["closed_by"] == "error"
    assert capture["artifacts"]["trace"] == "trace.json"


WINDOWED_SCRIPT = """
import sys
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()
x = torch.randn(2, 4)
print("script stdout: argv", sys.argv[1:])
with torch.no_grad():
    model(x)                      # before the window: not recorded
    if "--window" in sys.argv:
        torch.cuda.profiler.start()
        model(x)
        if "--raise" in sys.argv:
            raise KeyError("failure inside the script's window")
        torch.cuda.profiler.stop()
    model(x)                      # after the window: not recorded (unless the whole run is)
if "--exit" in sys.argv:
    sys.exit(3)
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "windowed.py"
    path.write_text(textwrap.dedent(WINDOWED_SCRIPT))
    return path


def test_script_window_is_honoured(tmp_path, script):
    out = tmp_path / "cap"
    result = run_capture(["--pass", "timeline", "--out", out, "--no-fx-map", "--", script, "--window"])
    assert result.returncode == 0, result.stderr
    assert "script stdout: argv ['--window']" in result.stdout
    names = [e["name"] for e in user_annotations(out / "trace.json")]
    assert names == ["nn.Module: Sequential", "nn.Module: 0", "nn.Module: 1"]
    capture = read_json(out / "capture.json")
    assert capture["mode"] == "script" and capture["window"] == "script"
    assert capture["window_info"]["script_profiler_starts"] == 1
    assert capture["window_info"]["opened_by"] == "script" and capture["window_info"]["closed_by"] == "script"


def test_script_without_window_is_profiled_whole(tmp_path, script):
    out = tmp_path / "cap"
    result = run_capture(["--pass", "timeline", "--out", out, "--no-fx-map", "--", script])
    assert result.returncode == 0, result.stderr
    names = [e["name"] for e in user_annotations(out / "trace.json")]
    assert names.count("nn.Module: Sequential") == 2
    assert read_json(out / "capture.json")["window"] == "whole_run"


def test_required_window_that_never_opens(tmp_path, script):
    out = tmp_path / "cap"
    result = run_capture(["--pass", "timeline", "--out", out, "--no-fx-map", "--window", "script", "--", script])
    assert result.returncode == 3
    assert "never opened" in result.stderr
    capture = read_json(out / "capture.json")
    assert capture["window"] == "never_opened" and capture["status"] == "never_opened"
    assert not (out / "trace.json").exists()


def test_counters_pass_needs_cuda_and_keeps_stdout_clean(tmp_path):
    out = tmp_path / "cap"
    result = run_capture(["--pass", "counters", "--out", out, "--workload", EXAMPLES_DIR / "mlp.py", "--device", "cpu"])
    assert result.returncode == 2
    assert result.stdout == ""
    assert "needs a CUDA device" in result.stderr
    capture = read_json(out / "capture_counters.json")
    assert capture["status"] == "error" and capture["pass"] == "counters"


CALL_ORDER_RUNNER = textwrap.dedent("""
    import os, sys, torch
    import opprof.capture
    calls = []
    for name in ("is_available", "device_count", "_lazy_init", "get_device_properties"):
        def spy(*args, _name=name, _real=getattr(torch.cuda, name), **kwargs):
            calls.append("torch.cuda." + _name)
            return _real(*args, **kwargs)
        setattr(torch.cuda, name, spy)
    code = opprof.capture.main(sys.argv[1:])
    with open(os.environ["CALLS_FILE"], "w") as f:  # pass B sends stdout to stderr
        f.write(",".join(calls))
    sys.exit(code)
""")

CALL_ORDER_WORKLOAD = textwrap.dedent("""
    import __main__, sys
    __main__.calls.append("workload imported")
    if "torch._inductor.compile_fx" in sys.modules:
        __main__.calls.append("Inductor imported before")
    import torch

    def get_model_and_input(device):
        __main__.calls.append("get_model_and_input")
        return torch.nn.Linear(4, 4).to(device), torch.randn(2, 4, device=device)
""")


@pytest.mark.parametrize("pass_,compile_", [("timeline", "eager"), ("counters", "eager"), ("counters", "inductor")])
def test_pass_b_asks_cuda_nothing_before_the_workload_is_imported(tmp_path, pass_, compile_):
    # `ncu --mode launch` holds pass B at its first CUDA call until pass A is done: the imports before it overlap
    # pass A, Inductor's compiler among them where the workload is compiled. Pass A checks the device first.
    workload = tmp_path / "workload.py"
    workload.write_text(CALL_ORDER_WORKLOAD)
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), CALLS_FILE=str(tmp_path / "calls"))
    result = subprocess.run([sys.executable, "-c", CALL_ORDER_RUNNER, "--pass", pass_, "--out", str(tmp_path / "cap"),
                             "--workload", str(workload), "--compile", compile_, "--device", "cpu"],
                            capture_output=True, text=True, timeout=240, env=env)
    calls = (tmp_path / "calls").read_text().split(",")
    first_cuda = next(i for i, c in enumerate(calls) if c.startswith("torch.cuda."))
    assert ("Inductor imported before" in calls) == (compile_ == "inductor"), calls
    if pass_ == "counters":
        assert result.returncode == 2 and "needs a CUDA device" in result.stderr  # this machine has no GPU
        assert calls[0] == "workload imported" and first_cuda > 0, calls
        assert "get_model_and_input" not in calls  # refused before the model is built
    else:
        assert result.returncode == 0, result.stderr
        assert first_cuda == 0 and calls.index("workload imported") > first_cuda, calls


def test_usage_errors(tmp_path):
    result = run_capture(["--pass", "timeline", "--out", tmp_path])
    assert result.returncode == 2 and "exactly one" in result.stderr
    result = run_capture(["--pass", "timeline", "--out", tmp_path, "--workload", tmp_path / "missing.py"])
    assert result.returncode == 2 and "workload file not found" in result.stderr
    result = run_capture(["--pass", "timeline", "--out", tmp_path, "--", tmp_path / "missing.py"])
    assert result.returncode == 2 and "script file not found" in result.stderr


def test_script_failing_inside_its_window_keeps_the_trace(tmp_path, script):
    out = tmp_path / "cap"
    result = run_capture(["--pass", "timeline", "--out", out, "--no-fx-map", "--", script, "--window", "--raise"])
    assert result.returncode == 1, result.stderr
    names = [e["name"] for e in user_annotations(out / "trace.json")]
    assert names == ["nn.Module: Sequential", "nn.Module: 0", "nn.Module: 1"]
    capture = read_json(out / "capture.json")
    assert capture["status"] == "error" and capture["error"]["type"] == "KeyError"
    assert capture["window"] == "script" and capture["window_info"]["closed_by"] == "error"


def test_script_exit_status_is_recorded_and_reported_as_failure(tmp_path, script):
    out = tmp_path / "cap"
    result = run_capture(["--pass", "timeline", "--out", out, "--no-fx-map", "--", script, "--exit"])
    assert result.returncode == 1, result.stderr
    capture = read_json(out / "capture.json")
    assert capture["status"] == "error" and capture["error"]["script_exit_status"] == 3
    assert capture["window"] == "whole_run" and (out / "trace.json").is_file()


FREEZE_PROBE = textwrap.dedent("""
    import gc, sys
    import opprof.capture
    code = opprof.capture.main(sys.argv[1:])
    print("frozen objects:", gc.get_freeze_count(), file=sys.stderr)
    sys.exit(code)
""")


@pytest.mark.parametrize("kind", ["workload", "script"])
def test_a_workload_runner_leaves_its_objects_to_the_exit_uncollected(tmp_path, kind, script):
    # The interpreter's last collection at exit walks everything torch and Inductor made; a workload module's
    # runner, its files written, freezes them. A script's objects keep their finalizers.
    workload = tmp_path / "workload.py"
    workload.write_text(textwrap.dedent("""
        import torch

        def get_model_and_input(device):
            return torch.nn.Linear(4, 4).to(device), torch.randn(2, 4, device=device)
    """))
    target = ["--workload", str(workload)] if kind == "workload" else ["--no-fx-map", "--", str(script)]
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    result = subprocess.run([sys.executable, "-c", FREEZE_PROBE, "--pass", "timeline", "--out", str(tmp_path / "cap"),
                             "--device", "cpu", *target], capture_output=True, text=True, timeout=240, env=env)
    assert result.returncode == 0, result.stderr
    frozen = int(result.stderr.rsplit("frozen objects:", 1)[1].split()[0])
    assert (frozen > 10000) if kind == "workload" else (frozen == 0), frozen
    assert read_json(tmp_path / "cap" / "capture.json")["status"] == "ok"


COMPILE_THREADS_PROBE = textwrap.dedent("""
    import json, sys, tempfile
    from opprof.capture import apply_inductor_config
    import torch._inductor.config as c
    applied = apply_inductor_config(tempfile.mkdtemp(), counters_pass=sys.argv[1] == "counters")
    print(json.dumps({"compile_threads": c.compile_threads, "applied": applied}))
""")


@pytest.mark.parametrize("pass_,env_threads,expected", [("counters", None, 1), ("counters", "3", 3),
                                                        ("timeline", "3", 3), ("timeline", None, None)])
def test_pass_b_compiles_in_the_process_unless_told_otherwise(tmp_path, pass_, env_threads, expected):
    # Pass B loads what pass A compiled into the cache: Inductor's worker pool would start after ncu's attach and
    # be waited for at exit (0.9 s of compiled GPT-2's pass B on the H200, docs/dedup.md §5).
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    env.pop("TORCHINDUCTOR_COMPILE_THREADS", None)
    if env_threads:
        env["TORCHINDUCTOR_COMPILE_THREADS"] = env_threads
    result = subprocess.run([sys.executable, "-c", COMPILE_THREADS_PROBE, pass_], capture_output=True, text=True,
                            timeout=240, env=env)
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    if expected is not None:  # pass A keeps Inductor's own choice (the machine's core count)
        assert probe["compile_threads"] == expected
    assert ("compile_threads" in probe["applied"]) == (pass_ == "counters" and env_threads is None)
