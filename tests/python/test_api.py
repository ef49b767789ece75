"""opprof.load and opprof.attribute on a real capture (the committed compiled GPT-2 fixture): the frames hold
what the database holds. Needs the built engine (make build) and pandas (scripts/install_deps.sh)."""

import json
import sqlite3
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR, REPO

import opprof
from opprof import api, engine

ENGINE = REPO / "build" / "opprof"
FIXTURE = REPO / "tests" / "fixtures" / "gpt2_compiled"
pytestmark = pytest.mark.skipif(not ENGINE.is_file(), reason="build/opprof not built (make build)")
pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "gpt2_compiled.db"
    subprocess.run([str(ENGINE), "attribute", "-q", "--trace", str(FIXTURE / "trace.json.gz"),
                    "--ncu", str(FIXTURE / "ncu.csv.gz"), "--inductor", str(FIXTURE / "inductor"), "-o", str(path)],
                   check=True)
    return path


@pytest.fixture(scope="module")
def sql(db):
    con = sqlite3.connect(db)
    yield lambda q, *a: con.execute(q, a).fetchall()
    con.close()


@pytest.fixture(scope="module")
def report(db):
    return json.loads(subprocess.run([str(ENGINE), "report", "--json", str(db)], capture_output=True, text=True,
                                     check=True).stdout)


def test_importing_opprof_imports_neither_torch_nor_pandas():
    out = subprocess.run([sys.executable, "-c", "import sys, opprof; print(sorted({'torch', 'pandas'} & set(sys.modules)))"],
                         capture_output=True, text=True, check=True, env={"PYTHONPATH": str(PYTHON_DIR)}).stdout
    assert out.strip() == "[]"
    assert opprof.load is api.load and opprof.attribute is api.attribute


def test_kernels_are_wide_one_row_per_kernel_with_every_counter(db, sql, report):
    kernels = opprof.load(db)["kernels"]
    assert len(kernels) == sql("SELECT count(*) FROM kernels")[0][0] > 0
    assert list(kernels.index) == [r[0] for r in sql("SELECT id FROM kernels ORDER BY id")]
    for column in ("name", "op", "module", "source_line", "duration_ns", "path", "fused_ops"):
        assert column in kernels.columns
    counters = [r[0] for r in sql("SELECT name FROM metrics WHERE present = 1 ORDER BY id")]
    assert counters and [c for c in kernels.columns if c in counters] == counters
    # Durations sum to the report's kernel time; each counter value is the database's.
    assert kernels.loc[kernels["kind"] == "kernel", "duration_ns"].sum() == report["kernel_time_ns"]
    kernel_id, metric, value = sql("SELECT kernel_id, metric, value FROM kernel_metric_view ORDER BY kernel_id LIMIT 1")[0]
    assert kernels.at[kernel_id, metric] == value
    replayed = sql("SELECT count(DISTINCT kernel_id) FROM kernel_metrics")[0][0]
    assert kernels["gpu__time_duration.sum"].notna().sum() == replayed


def test_operators_and_modules_hold_the_aggregates_and_their_counters(db, sql, report):
    profile = opprof.load(db)
    for frame, table, kind in (("operators", "operators", "operator"), ("modules", "modules", "module")):
        df = profile[frame]
        assert len(df) == sql(f"SELECT count(*) FROM {table}")[0][0] > 0
        assert df["time_ns"].sum() == sql(f"SELECT sum(time_ns) FROM {table}")[0][0]
        group_id, metric, value = sql("SELECT group_id, metric, value FROM group_metrics WHERE group_kind = ? "
                                      "ORDER BY group_id LIMIT 1", kind)[0]
        assert df.at[group_id, metric] == value
    assert profile["operators"]["key"].iloc[0] == report["operators"][0]["name"]
    assert profile.meta["schema_version"] == str(api.SCHEMA_VERSION)
    assert set(profile) == set(api.FRAMES) and len(profile) == len(api.FRAMES)
    with pytest.raises(KeyError, match="frames"):
        profile["no_such_frame"]


def test_the_reader_knows_the_engines_schema_version(sql):
    assert sql("PRAGMA user_version")[0][0] == api.SCHEMA_VERSION
    assert sql("PRAGMA application_id")[0][0] == api.APPLICATION_ID


def test_attribute_runs_the_engine(db, tmp_path):
    profile = opprof.attribute(trace=FIXTURE / "trace.json.gz", ncu=FIXTURE / "ncu.csv.gz",
                               inductor=FIXTURE / "inductor", output=tmp_path / "p.db")
    assert profile.path == tmp_path / "p.db"
    expected = opprof.load(db)
    assert len(profile["kernels"]) == len(expected["kernels"])
    assert profile["operators"]["time_ns"].tolist() == expected["operators"]["time_ns"].tolist()


def test_attribute_raises_the_engines_error(tmp_path):
    with pytest.raises(engine.EngineError, match="no_such_trace.json"):
        opprof.attribute(trace=tmp_path / "no_such_trace.json", output=tmp_path / "p.db")
    assert not (tmp_path / "p.db").exists()


def test_load_rejects_what_is_not_a_profile(tmp_path):
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(ValueError, match="not an opprof profile"):
        opprof.load(other)
    with pytest.raises(FileNotFoundError):
        opprof.load(tmp_path / "missing.db")


def test_load_rejects_a_schema_version_it_cannot_read(db, tmp_path):
    import shutil

    from opprof.api import OLDEST_READABLE_SCHEMA_VERSION, SCHEMA_VERSION

    for version in (SCHEMA_VERSION + 1, OLDEST_READABLE_SCHEMA_VERSION - 1):
        copy = tmp_path / f"v{version}.db"
        shutil.copy(db, copy)
        con = sqlite3.connect(copy)
        con.execute(f"PRAGMA user_version = {version}")
        con.commit()
        con.close()
        with pytest.raises(ValueError, match=f"profile has schema version {version}; this opprof reads schema version "
                                             f"{SCHEMA_VERSION}"):
            opprof.load(copy)


def test_without_pandas_the_error_names_the_extra(db, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ImportError, match=r"opprof\[pandas\]"):
        opprof.load(db)
