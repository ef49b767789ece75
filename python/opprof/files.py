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
