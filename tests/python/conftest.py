"""Shared setup for the Python tests: the package is used from the source tree (python/), as the GPU
machine uses it through PYTHONPATH=python."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = REPO / "python"
EXAMPLES_DIR = REPO / "examples"
DATA_DIR = REPO / "data"

if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: compiles with Inductor or runs subprocesses (tens of seconds); runs by default")
    # torch's own imports (torch.utils.mkldnn) warn about TorchScript; not ours to fix.
    config.addinivalue_line("filterwarnings", "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")


def run_capture(args, cwd=None, timeout=240):
    """Runs `python -m opprof.capture ARGS` in a fresh interpreter, as the capture scripts do."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PYTHON_DIR), env.get("PYTHONPATH", "")) if p)
    for name in ("TORCH_COMPILE_DEBUG", "TORCH_COMPILE_DEBUG_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        env.pop(name, None)  # the capture must set these itself
    return subprocess.run(
        [sys.executable, "-m", "opprof.capture", *map(str, args)],
        cwd=str(cwd or REPO),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def user_annotations(trace_path):
    """The user_annotation events of a Chrome trace, sorted by start time."""
    import json

    with open(trace_path, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    ranges = [e for e in events if e.get("cat") == "user_annotation" and e.get("ph") == "X"]
    return sorted(ranges, key=lambda e: (e["ts"], -e["dur"]))


@pytest.fixture
def repo():
    return REPO
