"""Small file helpers shared by the capture pieces."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_json_atomic(path: str | os.PathLike, payload: Any) -> None:
    """Writes JSON through a temporary file in the same folder and os.replace, so that a reader (or a
    crash in the middle) never leaves a half-written file behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=1, default=str)
            f.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp makes the file private; these are ordinary shared artifacts
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# Where `pip install .` puts the agent libraries: opprof/lib/ inside this package (CMakeLists.txt,
# OPPROF_AGENT_INSTALL_DIR; the engine looks there too, src/opprof/capture/agent_libraries.cpp).
PACKAGE_LIB_DIR = Path(__file__).resolve().parent / "lib"


def agent_candidates(environ: Any, build_subdir: str, filename: str) -> list[Path]:
    """Where an agent library may be when its environment variable is not set, in the engine's order: the
    build tree beside the injected tracer (``<tracer dir>/../<build_subdir>/``: build/agents/), the tracer's own folder
    (an install prefix's lib/, or this package's lib/ in a wheel), then this package's lib/."""
    candidates = []
    tracer = environ.get("NVTX_INJECTION64_PATH") or environ.get("CUDA_INJECTION64_PATH")
    if tracer:
        tracer_dir = Path(tracer).resolve().parent
        candidates += [tracer_dir.parent / build_subdir / filename, tracer_dir / filename]
    package_copy = PACKAGE_LIB_DIR / filename
    if package_copy not in candidates:
        candidates.append(package_copy)
    return candidates


def first_existing(paths: list[Path], environ: Any, env_var: str, filename: str,
                   explicit_missing: str) -> tuple[Path | None, str]:
    """The first of ``paths`` that is a file, or None and why not: ``explicit_missing`` when ``env_var`` chose
    the paths, else where ``filename`` was looked for."""
    found = next((p for p in paths if p.is_file()), None)
    if found is not None:
        return found, ""
    if environ.get(env_var):
        return None, explicit_missing
    looked = ", ".join(str(p) for p in paths)
    return None, f"{filename} not found (looked at {looked})"
