"""Profiles of committed fixtures for the report tests: built once per test session with build/opprof."""

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENGINE = REPO / "build" / "opprof"
# Six kernels of known bottleneck on an H200 with FLOP counters (tests/fixtures/microkernels/README.md).
MICROKERNELS = REPO / "tests" / "fixtures" / "microkernels"


def run_engine(*args, timeout=120):
    """Runs build/opprof; fails with its output when it exits non-zero."""
    r = subprocess.run([str(ENGINE), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"opprof {' '.join(map(str, args))} exited {r.returncode}:\n{r.stdout}{r.stderr}"
    return r


def attribute_fixture(fixture: Path, out_dir: Path) -> Path:
    """The profile database of a fixture with a torch.profiler trace and an ncu CSV."""
    db = out_dir / f"{fixture.name}.db"
    args = ["attribute", "--trace", fixture / "trace.json.gz", "--ncu", fixture / "ncu.csv.gz", "-o", db]
    if (fixture / "inductor").is_dir():
        args[5:5] = ["--inductor", fixture / "inductor"]
    run_engine(*args)
    return db
