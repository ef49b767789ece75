"""The opprof engine (the C++ ``opprof`` executable), run from Python.

Python does not re-implement what the engine knows (the metric-set format, the attribution pipeline): it runs
the executable and reads what it prints. The executable is looked up in this order:

1. ``$OPPROF_BIN`` (``opprof profile`` sets it for the processes it starts; a user's override; it must name a
   file);
2. in a source checkout used through PYTHONPATH=python, the build trees: ``<repo>/$OPPROF_BUILD_DIR/opprof`` when
   that is set (the scripts' convention), ``<repo>/build/opprof`` (make build), ``<repo>/build-gpu/opprof`` (the
   GPU machine's);
3. the scripts directory of the environment this package is installed in (``pip install .`` puts it there);
4. ``opprof`` on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

ENV_BIN = "OPPROF_BIN"
EXECUTABLE = "opprof"


class EngineNotFound(FileNotFoundError):
    """No opprof executable where the lookup goes; the message lists the places."""


class EngineError(RuntimeError):
    """The engine ran and failed; the message is its own (``file:line:col: what``)."""

    def __init__(self, message: str, returncode: int):
        super().__init__(message)
        self.returncode = returncode


def candidate_paths(environ: "os._Environ[str] | dict[str, str]" = os.environ) -> list[Path]:
    """Where the executable may be, in the order tried (PATH comes after these)."""
    explicit = environ.get(ENV_BIN)
    if explicit:
        return [Path(explicit)]
    here = Path(__file__).resolve().parent
    candidates = []
    repo = here.parent.parent
    if (repo / "CMakeLists.txt").is_file() and (repo / "python" / "opprof").is_dir():
        build_dirs = [environ["OPPROF_BUILD_DIR"]] if environ.get("OPPROF_BUILD_DIR") else []
        candidates += [repo / d / EXECUTABLE for d in (*build_dirs, "build", "build-gpu")]
    candidates.append(Path(sysconfig.get_path("scripts")) / EXECUTABLE)
    return candidates


def find_engine(environ: "os._Environ[str] | dict[str, str]" = os.environ) -> Path:
    paths = candidate_paths(environ)
    found = next((p for p in paths if p.is_file() and os.access(p, os.X_OK)), None)
    if found is not None:
        return found
    if environ.get(ENV_BIN):
        raise EngineNotFound(f"{ENV_BIN}={environ[ENV_BIN]} names no executable file")
    on_path = shutil.which(EXECUTABLE, path=environ.get("PATH"))
    if on_path:
        return Path(on_path)
    raise EngineNotFound(
        "the opprof executable was not found (looked at " + ", ".join(str(p) for p in paths)
        + f" and PATH); build it (make build), pip install opprof, or set {ENV_BIN}"
    )


def run_engine(args: list[str], environ: "os._Environ[str] | dict[str, str]" = os.environ) -> str:
    """Runs ``opprof ARGS`` and returns its standard output; raises EngineError with the engine's message
    when it exits non-zero."""
    result = subprocess.run([str(find_engine(environ)), *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        prefix = "opprof: error: "
        errors = [line[len(prefix):] for line in result.stderr.splitlines() if line.startswith(prefix)]
        message = "\n".join(errors) or result.stderr.strip() or f"opprof {' '.join(args)} exited {result.returncode}"
        raise EngineError(message, result.returncode)
    return result.stdout
