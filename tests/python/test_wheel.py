"""scripts/check_wheel.sh: `pip install .` into a fresh venv gives an opprof whose doctor finds the tracer and
whose binary needs no shared simdjson, fmt or sqlite. Minutes of building, so only with OPPROF_WHEEL_TEST=1."""

import os
import subprocess

import pytest

from conftest import REPO


@pytest.mark.skipif(os.environ.get("OPPROF_WHEEL_TEST") != "1", reason="set OPPROF_WHEEL_TEST=1 (builds a wheel)")
def test_the_installed_wheel_works():
    result = subprocess.run([str(REPO / "scripts" / "check_wheel.sh")], capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "OK: tracer found in the package" in result.stderr
    ldd = result.stdout  # the script prints ldd's list there
    assert "libc.so" in ldd and "simdjson" not in ldd and "sqlite" not in ldd and "libfmt" not in ldd
