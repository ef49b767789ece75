"""`opprof optimize`: the CLI checks the request, then runs python -m opprof.optimize with opprof's Python side
and itself as the engine; bad input is exit status 2 with one line naming what is wrong."""

import subprocess
import sys

import pytest

from conftest import REPO

ENGINE = REPO / "build" / "opprof"
pytestmark = pytest.mark.skipif(not ENGINE.is_file(), reason="build/opprof not built (make build)")


def optimize(*args):
    return subprocess.run([str(ENGINE), "optimize", *map(str, args)], capture_output=True, text=True, cwd=REPO)


def test_bad_requests_are_refused_before_python_starts(tmp_path):
    missing = optimize(tmp_path / "missing.py")
    assert missing.returncode == 2 and "missing.py: no such workload file" in missing.stderr
    program = optimize("examples/attention_block.py", "--", "python", "train.py")
    assert program.returncode == 2 and "not a program after --" in program.stderr
    precision = optimize("examples/attention_block.py", "--allow-precision", "int8")
    assert precision.returncode == 2 and "int8" in precision.stderr
    profile = optimize("examples/attention_block.py", "--profile", tmp_path / "none.db")
    assert profile.returncode == 2 and "none.db: no such profile" in profile.stderr


def test_the_driver_runs_with_the_options_passed_on(tmp_path):
    # --python names an interpreter that prints its arguments: what the CLI hands the driver.
    fake = tmp_path / "fake_python"
    fake.write_text(f"#!{sys.executable}\nimport os, sys\nprint(sys.argv[1:]); print(os.environ['OPPROF_BIN'])\n")
    fake.chmod(0o755)
    done = optimize("examples/attention_block.py", "--python", fake, "--allow-precision", "bf16", "--tolerance", "0.05",
                    "--only", "bf16", "-o", tmp_path / "out", "--skip-ncu")
    assert done.returncode == 0, done.stderr
    argv, engine = done.stdout.splitlines()
    assert argv.startswith("['-m', 'opprof.optimize', 'examples/attention_block.py', '--compile', 'inductor'")
    for expected in ("'--tolerance', '0.05'", "'--allow-precision', 'bf16'", "'--only', 'bf16'", "'--skip-ncu'",
                     f"'--out', '{tmp_path / 'out'}'"):
        assert expected in argv
    assert engine == str(ENGINE.resolve())
