"""`opprof export --parquet` read back by readers that are not opprof's: DuckDB's Python package (and Arrow's
dataset reader for the partitioning), against the profile database read with sqlite3. On two real captures
from an H200: the cross-rank-dedup job of two gloo ranks (tests/fixtures/multiproc/gpt2_l1_ranks) and the
compiled GPT-2 step of the demo (one process: the NULL partition)."""

import math
import sqlite3
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from report_fixtures import ENGINE, REPO, attribute_fixture, run_engine

duckdb = pytest.importorskip("duckdb")
pytestmark = pytest.mark.skipif(not ENGINE.is_file(), reason="build/opprof not built (make build)")
JOB = REPO / "tests" / "fixtures" / "multiproc" / "gpt2_l1_ranks"
DEMO = REPO / "tests" / "fixtures" / "gpt2_compiled"


def parquet_built() -> bool:
    help_text = subprocess.run([str(ENGINE), "export", "--help"], capture_output=True, text=True).stdout
    return "This build: Apache Arrow" in " ".join(help_text.split())


needs_parquet = pytest.mark.skipif(not parquet_built(), reason="this opprof was built without Apache Arrow")


@pytest.fixture(scope="module")
def job_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("parquet_job")
    db = out / "job.db"
    run_engine("attribute", "--job", JOB, "--ncu", JOB / "ncu.csv.gz", "--metrics", JOB / "metrics.tsv", "-o", db, "-q")
    export = out / "export"
    run_engine("export", db, "--parquet", export, "--quiet")
    return db, export


def kernels(export: Path) -> str:
    return f"read_parquet('{export}/kernels/*/*.parquet', hive_partitioning = true)"


def sqlite_rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as c:
        return c.execute(sql).fetchall()


@needs_parquet
def test_every_kernel_is_in_its_ranks_partition_with_its_attribution(job_export):
    db, export = job_export
    assert sorted(p.name for p in (export / "kernels").iterdir()) == ["rank=0", "rank=1"]
    got = duckdb.sql(f"SELECT rank, count(*), sum(duration_ns) FROM {kernels(export)} GROUP BY rank ORDER BY rank").fetchall()
    want = sqlite_rows(db, "SELECT rank, count(*), sum(duration_ns) FROM kernels GROUP BY rank ORDER BY rank")
    assert got == want
    assert [r[1] for r in got] == [160, 160]  # 136 kernels and 24 copies per rank
    # Row by row: the attribution columns are the database's.
    cols = "id, rank, pid, kind, name, op, module, phase, path, family, grid_x, block_x"
    got = duckdb.sql(f"SELECT {cols} FROM {kernels(export)} ORDER BY id").fetchall()
    assert got == sqlite_rows(db, f"SELECT {cols} FROM kernel_view ORDER BY id")


@needs_parquet
def test_counters_are_columns_and_rank_1_holds_rank_0s_propagated_values(job_export):
    db, export = job_export
    metrics = [r[0] for r in duckdb.sql(f"SELECT name FROM '{export}/metrics.parquet' WHERE present = 1").fetchall()]
    assert metrics == ["gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed"]
    want = defaultdict(dict)
    for kernel, metric, value in sqlite_rows(db, "SELECT kernel_id, metric, value FROM kernel_metric_view"):
        want[kernel][metric] = value
    got = duckdb.sql(f'SELECT id, "{metrics[0]}", "{metrics[1]}", counters_from, rank FROM {kernels(export)}').fetchall()
    assert len(got) == 320
    for kernel, duration, sm, counters_from, rank in got:
        assert (duration, sm) == (want[kernel].get(metrics[0]), want[kernel].get(metrics[1])), kernel
    # Rank 1 was not replayed: each of its kernels names rank 0's kernel whose values it took.
    pairs = duckdb.sql(
        f'SELECT d."{metrics[0]}", s."{metrics[0]}", s.rank, d.name = s.name FROM {kernels(export)} d '
        f"JOIN {kernels(export)} s ON s.id = d.counters_from WHERE d.rank = 1").fetchall()
    assert len(pairs) == 136
    assert all(a == b and rank == 0 and same_name for a, b, rank, same_name in pairs)
    assert duckdb.sql(f"SELECT count(*) FROM {kernels(export)} WHERE rank = 0 AND counters_from IS NOT NULL").fetchone() == (0,)


@needs_parquet
def test_operators_and_modules_per_rank_add_up_to_the_ranks_kernel_time(job_export):
    db, export = job_export
    for dataset, kind in (("operators", "operator"), ("modules", "module")):
        got = duckdb.sql(
            f"SELECT rank, {kind}, kernels, time_ns FROM read_parquet('{export}/{dataset}/*/*.parquet', "
            f"hive_partitioning = true) ORDER BY rank, {kind}").fetchall()
        want = sqlite_rows(db, f"SELECT rank, key, kernels, time_ns FROM rank_groups WHERE group_kind = '{kind}' "
                               "ORDER BY rank, key")
        assert got == want
    shares = duckdb.sql(f"SELECT rank, sum(time_share) FROM read_parquet('{export}/operators/*/*.parquet', "
                        "hive_partitioning = true) GROUP BY rank").fetchall()
    assert all(math.isclose(s, 1.0, rel_tol=1e-9) for _, s in shares)  # every kernel has an operator here


@needs_parquet
def test_the_manifest_lists_what_was_written_and_arrow_reads_the_partitioning(job_export):
    import json

    pads = pytest.importorskip("pyarrow.dataset")
    _, export = job_export
    manifest = json.loads((export / "opprof_export.json").read_text())
    assert manifest["opprof_parquet_export"] == 1
    assert manifest["rows"]["kernels"] == 320
    assert manifest["partitions"] == ["rank=0", "rank=1"]
    for f in manifest["files"]:
        assert (export / f).is_file(), f
    table = pads.dataset(export / "kernels", format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 320
    assert sorted(set(table.column("rank").to_pylist())) == [0, 1]


@needs_parquet
def test_a_single_process_profile_goes_to_the_null_partition(tmp_path):
    db = attribute_fixture(DEMO, tmp_path)
    export = tmp_path / "export"
    run_engine("export", db, "--parquet", export, "--quiet")
    assert [p.name for p in (export / "kernels").iterdir()] == ["rank=__HIVE_DEFAULT_PARTITION__"]
    got = duckdb.sql(f"SELECT rank IS NULL, count(*) FROM {kernels(export)} GROUP BY ALL").fetchall()
    assert got == [(True, sqlite_rows(db, "SELECT count(*) FROM kernels")[0][0])]
    got = duckdb.sql(f"SELECT operator, kernels, time_ns FROM read_parquet('{export}/operators/*/*.parquet') "
                     "ORDER BY time_ns DESC, operator").fetchall()
    assert got == sqlite_rows(db, "SELECT key, kernels, time_ns FROM operators ORDER BY time_ns DESC, key")
    # A dataset without rows (no collectives in one process) still has one file with its columns.
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{export}/collectives/*/*.parquet')").fetchone() == (0,)


@needs_parquet
def test_an_export_replaces_an_earlier_one_and_refuses_a_directory_that_is_not_one(job_export, tmp_path):
    db, _ = job_export
    export = tmp_path / "export"
    run_engine("export", db, "--parquet", export, "--quiet")
    (export / "kernels" / "rank=0" / "stale.parquet").write_bytes(b"not parquet")
    run_engine("export", db, "--parquet", export, "--quiet")
    assert not (export / "kernels" / "rank=0" / "stale.parquet").exists()
    assert not list(tmp_path.glob("export.tmp-*")) and not list(tmp_path.glob("export.old-*"))

    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    r = subprocess.run([str(ENGINE), "export", str(db), "--parquet", str(other)], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "is not an opprof Parquet export" in r.stderr
    assert (other / "notes.txt").read_text() == "keep me"
    assert not list(tmp_path.glob("mine.tmp-*"))


@needs_parquet
def test_an_interrupted_export_leaves_nothing_and_a_dead_ones_temporary_is_removed(job_export, tmp_path):
    import os
    import signal
    import time

    db, _ = job_export
    export = tmp_path / "export"
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"export.tmp-{dead.pid}"
    (stale / "kernels").mkdir(parents=True)
    # The export stops itself after writing the kernels (OPPROF_PAUSE_AT); interrupted there, it removes
    # its temporary and writes nothing.
    env = dict(os.environ, OPPROF_PAUSE_AT="parquet_export.write")
    p = subprocess.Popen([str(ENGINE), "export", str(db), "--parquet", str(export)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while Path(f"/proc/{p.pid}/stat").read_text().split(")")[-1].split()[0] != "T":
        assert time.monotonic() < deadline and p.poll() is None, "the export did not stop at its pause point"
        time.sleep(0.05)
    assert not stale.exists()  # removed before the work began
    assert (tmp_path / f"export.tmp-{p.pid}" / "kernels").is_dir()
    p.send_signal(signal.SIGINT)
    p.send_signal(signal.SIGCONT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGINT, err
    assert "interrupted" in err
    assert not export.exists()
    assert not list(tmp_path.glob("export.*"))
