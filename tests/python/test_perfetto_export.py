"""`opprof export --perfetto` on a committed fixture, checked by a parser that is not opprof's: the JSON
Schema of the Chrome trace-event format (tests/python/data/trace_event_format.schema.json, with the
jsonschema package) and the trace's own structure against the database read with sqlite3. Perfetto's
trace_processor reads the trace too when OPPROF_TRACE_PROCESSOR_SHELL names its shell binary: the perfetto
package downloads that binary on first use, which machines without network access cannot."""

import json
import os
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from report_fixtures import ENGINE, MICROKERNELS, attribute_fixture, run_engine

jsonschema = pytest.importorskip("jsonschema")
pytestmark = pytest.mark.skipif(not ENGINE.is_file(), reason="build/opprof not built (make build)")
SCHEMA = Path(__file__).parent / "data" / "trace_event_format.schema.json"
GPU_PID_BASE = 1 << 30  # opprof/export/perfetto.hpp: kPerfettoGpuPidBase


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("perfetto")
    db = attribute_fixture(MICROKERNELS, out)
    trace = out / "trace.json"
    run_engine("export", db, "--perfetto", trace, "--quiet")
    with open(trace, encoding="utf-8") as f:
        return db, trace, json.load(f)


def trace_event_validator():
    with open(SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_trace_matches_the_trace_event_format(exported):
    _, _, doc = exported
    errors = list(trace_event_validator().iter_errors(doc))
    assert errors == [], "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


def test_the_schema_refuses_what_perfetto_cannot_read():
    broken = {"traceEvents": [
        {"ph": "X", "name": "no duration", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "C", "name": "text counter", "pid": 1, "tid": 0, "ts": 1, "args": {"value": "high"}},
        {"ph": "f", "name": "flow without id", "pid": 1, "tid": 1, "ts": 2, "bp": "e"},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1},
    ]}
    failed = {e.absolute_path[1] for e in trace_event_validator().iter_errors(broken)}
    assert failed == {0, 1, 2, 3}


def test_every_activity_launch_and_flow_of_the_database(exported):
    db, _, doc = exported
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    events = doc["traceEvents"]
    gpu = {e["args"]["kernel_id"]: e for e in events if e["ph"] == "X" and "kernel_id" in e.get("args", {})}
    kernels = con.execute("SELECT id, name, device, stream, start_ns, end_ns, op, module, phase FROM kernel_view").fetchall()
    assert len(gpu) == len(kernels)
    for kid, name, device, stream, start, end, op, module, phase in kernels:
        e = gpu[kid]
        assert (e["name"], e["pid"], e["tid"]) == (name, GPU_PID_BASE + device, stream)
        assert round(e["ts"] * 1000) == start and round(e["dur"] * 1000) == end - start
        assert e["args"].get("op") == op and e["args"].get("module") == module and e["args"].get("phase") == phase

    launches = [e for e in events if e["ph"] == "X" and e.get("cat") == "launch"]
    assert len(launches) == con.execute("SELECT count(*) FROM launches").fetchone()[0]
    # One flow per kernel whose launch is in the database, from inside the launch slice to the kernel's start.
    linked = con.execute("SELECT k.id, l.tid, l.cpu_start_ns, l.cpu_end_ns FROM kernels k JOIN launches l "
                         "ON l.pid = k.pid AND l.correlation = k.correlation").fetchall()
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert set(starts) == set(finishes) == {kid for kid, *_ in linked}
    for kid, tid, cpu_start, cpu_end in linked:
        assert starts[kid]["tid"] == tid and cpu_start <= round(starts[kid]["ts"] * 1000) <= cpu_end
        assert finishes[kid]["ts"] == gpu[kid]["ts"] and finishes[kid]["bp"] == "e"

    ranges = [e for e in events if e["ph"] == "X" and "range_id" in e.get("args", {})]
    assert len(ranges) == con.execute("SELECT count(*) FROM ranges").fetchone()[0]
    # Counter tracks: each ncu percentage value of each kernel, on and off.
    values = con.execute("SELECT count(*) FROM kernel_metrics km JOIN metrics m ON m.id = km.metric_id "
                         "WHERE m.unit = '%' AND m.present = 1").fetchone()[0]
    assert values > 0
    assert Counter(e["ph"] for e in events)["C"] == 2 * values
    # Every track that holds events is named.
    named = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"} <= named


@pytest.mark.skipif(not os.environ.get("OPPROF_TRACE_PROCESSOR_SHELL"),
                    reason="OPPROF_TRACE_PROCESSOR_SHELL is unset: no trace_processor shell to load the trace with")
def test_trace_processor_reads_the_trace(exported):
    tp_module = pytest.importorskip("perfetto.trace_processor")
    db, trace, _ = exported
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    config = tp_module.TraceProcessorConfig(bin_path=os.environ["OPPROF_TRACE_PROCESSOR_SHELL"])
    tp = tp_module.TraceProcessor(trace=str(trace), config=config)
    try:
        slices = next(iter(tp.query("SELECT count(*) AS n FROM slice"))).n
        flows = next(iter(tp.query("SELECT count(*) AS n FROM flow"))).n
    finally:
        tp.close()
    expected_slices = sum(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("kernels", "launches", "ranges"))
    assert slices == expected_slices
    assert flows == con.execute("SELECT count(*) FROM kernels k JOIN launches l "
                                "ON l.pid = k.pid AND l.correlation = k.correlation").fetchone()[0]
