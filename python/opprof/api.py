"""opprof from a notebook: a profile database as pandas DataFrames, and the engine run from Python.

  >>> import opprof
  >>> profile = opprof.load("profile.db")
  >>> profile["kernels"].head()          # one row per GPU activity, every ncu counter a column
  >>> profile = opprof.attribute(trace="trace.json.gz", ncu="ncu.csv.gz", inductor="inductor/")

The frames follow the database's schema (docs/schema.md): ``kernels`` is ``kernel_view`` (name, kind,
op, module, source_line, duration_ns, path, ... and phase where the schema has it) indexed by kernel id,
with one column per ncu metric (``kernel_metric_view`` pivoted, in the metric's unit; NaN where ncu did not
replay the kernel); ``operators``, ``modules`` and ``kernel_families`` are the aggregate tables with their
``group_metrics`` as columns; ``metrics`` is the metric table (name, unit, aggregate, axis, reason). pandas
is an optional dependency (``pip install 'opprof[pandas]'``); importing opprof does not import it.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from opprof import contract
from opprof.engine import run_engine

# The profile schema this reader knows (data/profile_schema.sql, PRAGMA user_version) and the file's
# application_id, "oppf": the contract's, which the engine writes.
SCHEMA_VERSION = contract.PROFILE_SCHEMA_VERSION
OLDEST_READABLE_SCHEMA_VERSION = contract.PROFILE_OLDEST_READABLE_SCHEMA_VERSION
APPLICATION_ID = contract.PROFILE_APPLICATION_ID

# The frames of a profile: name -> (table, group_kind of its group_metrics or None).
_GROUP_TABLES = {"operators": "operator", "modules": "module", "kernel_families": "family"}
FRAMES = ("kernels", *_GROUP_TABLES, "metrics")


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(
            "opprof.load needs pandas, an optional dependency: pip install 'opprof[pandas]' (or pip install pandas)"
        ) from exc
    return pandas


class Profile(Mapping):
    """A profile database read as DataFrames, each built on first access. ``meta`` holds the meta table."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._pd = _pandas()
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: no such profile")
        # Read-only: a notebook never changes the profile it reads.
        self._db = sqlite3.connect(f"file:{self.path.resolve()}?mode=ro", uri=True)
        application_id = self._db.execute("PRAGMA application_id").fetchone()[0]
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if application_id != APPLICATION_ID:
            raise ValueError(f"{self.path}: not an opprof profile (application_id {application_id:#x})")
        if not OLDEST_READABLE_SCHEMA_VERSION <= version <= SCHEMA_VERSION:
            raise ValueError(
                f"{self.path}: profile has schema version {version}; this opprof reads schema version {SCHEMA_VERSION} "
                f"(and older ones down to {OLDEST_READABLE_SCHEMA_VERSION})"
            )
        self.meta = dict(self._db.execute("SELECT key, value FROM meta"))
        self._frames: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in FRAMES:
            raise KeyError(f"{name!r}: a profile has the frames {', '.join(FRAMES)}")
        if name not in self._frames:
            self._frames[name] = self._read(name)
        return self._frames[name]

    def __iter__(self) -> Iterator[str]:
        return iter(FRAMES)

    def __len__(self) -> int:
        return len(FRAMES)

    def __repr__(self) -> str:
        return f"opprof.Profile({str(self.path)!r}, frames={list(FRAMES)})"

    def close(self) -> None:
        self._db.close()

    def _query(self, sql: str, params: tuple = ()) -> Any:
        return self._pd.read_sql_query(sql, self._db, params=params)

    def _wide(self, frame: Any, long: Any, id_column: str) -> Any:
        """frame (indexed by id) with the long (id, metric, value) rows as one column per metric, the
        metrics in the metric table's order."""
        if long.empty:
            return frame
        order = [m for m in self["metrics"]["name"] if m in set(long["metric"])]
        wide = long.pivot(index=id_column, columns="metric", values="value").reindex(columns=order)
        wide.columns.name = None
        return frame.join(wide)

    def _read(self, name: str) -> Any:
        if name == "metrics":
            return self._query("SELECT * FROM metrics ORDER BY id").set_index("id")
        if name == "kernels":
            kernels = self._query("SELECT * FROM kernel_view ORDER BY id").set_index("id")
            counters = self._query("SELECT kernel_id, metric, value FROM kernel_metric_view")
            return self._wide(kernels, counters, "kernel_id")
        kind = _GROUP_TABLES[name]
        groups = self._query(f"SELECT * FROM {name} ORDER BY id").set_index("id")
        counters = self._query("SELECT group_id, metric, value FROM group_metrics WHERE group_kind = ?", (kind,))
        return self._wide(groups, counters, "group_id")


def load(path: str | os.PathLike) -> Profile:
    """The profile database at ``path`` as a read-only mapping of DataFrames (see this module's doc)."""
    return Profile(path)


def attribute(trace: str | os.PathLike, ncu: str | os.PathLike | None = None,
              inductor: str | os.PathLike | None = None, output: str | os.PathLike | None = None,
              metrics: str | os.PathLike | None = None) -> Profile:
    """Runs the engine (``opprof attribute``) on a capture and returns the profile it wrote.

    ``trace`` is the timeline (torch.profiler trace, tracer log or nsys export), ``ncu`` the counters
    (``ncu --csv --page raw --print-units base``), ``inductor`` the Inductor debug directory, ``metrics`` a
    metric-set file. ``output`` defaults to ``profile.db`` in a new temporary directory. Raises
    opprof.engine.EngineError with the engine's ``file:line:col`` message on bad input."""
    _pandas()  # a missing pandas fails before a long attribution, not after
    if output is None:
        output = Path(tempfile.mkdtemp(prefix="opprof-")) / "profile.db"
    args = ["attribute", "--trace", os.fspath(trace), "-o", os.fspath(output)]
    for flag, value in (("--ncu", ncu), ("--inductor", inductor), ("--metrics", metrics)):
        if value is not None:
            args += [flag, os.fspath(value)]
    run_engine([*args, "--quiet"])
    return load(output)
