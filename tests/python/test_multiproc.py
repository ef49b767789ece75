"""A multi-process job on the CPU: torchrun starts two gloo ranks of examples/train_ddp.py, each under
opprof's capture runner (as `opprof profile -- torchrun ...` runs them), and each rank writes its own
capture folder named by its rank, with its process identity and its collectives' CPU ranges.

No kernels without CUDA: the engine's side of a job (merge, ranks, communication) is tested in
tests/cpp/test_job.cpp on hand-made rank captures, and on the H200 fixture tests/fixtures/multiproc.
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES_DIR, PYTHON_DIR, REPO

from opprof import capture, contract

pytestmark = pytest.mark.slow


def test_process_folder_is_named_by_rank_else_pid(monkeypatch):
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert capture.process_dir_name() == "rank3"
    monkeypatch.delenv("RANK")
    assert capture.process_dir_name() == "rank1"
    monkeypatch.delenv("LOCAL_RANK")
    assert capture.process_dir_name() == f"pid{os.getpid()}"
    monkeypatch.setenv(contract.ENV_TRACE_PER_PROCESS, "0")
    assert not capture.per_process()
    monkeypatch.setenv(contract.ENV_TRACE_PER_PROCESS, "1")
    assert capture.per_process()


def test_only_the_listed_ranks_open_ncus_window_in_pass_b(monkeypatch):
    monkeypatch.setenv(contract.ENV_TRACE_PER_PROCESS, "1")
    monkeypatch.setenv(contract.ENV_COUNTERS_RANKS, "0,2")
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.setenv("RANK", "1")
    assert not capture.counters_window_wanted()
    for rank in ("0", "2"):
        monkeypatch.setenv("RANK", rank)
        assert capture.counters_window_wanted()
    # Without a rank, outside a job, or with a list it cannot read, a process is replayed.
    monkeypatch.delenv("RANK")
    assert capture.counters_window_wanted()
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv(contract.ENV_COUNTERS_RANKS, "zero")
    assert capture.counters_window_wanted()
    monkeypatch.setenv(contract.ENV_COUNTERS_RANKS, "0")
    monkeypatch.setenv(contract.ENV_TRACE_PER_PROCESS, "0")
    assert capture.counters_window_wanted()


def test_torchrun_ranks_write_one_capture_folder_each(tmp_path):
    out = tmp_path / "job"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PYTHON_DIR), env.get("PYTHONPATH", "")) if p)
    env[contract.ENV_TRACE_PER_PROCESS] = "1"
    env["OMP_NUM_THREADS"] = "1"
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone",
         "-m", "opprof.capture", "--pass", "timeline", "--backend", "torch", "--out", str(out), "--",
         str(EXAMPLES_DIR / "train_ddp.py"), "--model", "tiny", "--device", "cpu", "--steps", "1"],
        cwd=str(REPO), env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-4000:]
    assert sorted(p.name for p in out.iterdir()) == ["rank0", "rank1"]  # nothing of one rank at the top
    pids = set()
    for rank in (0, 1):
        folder = out / f"rank{rank}"
        record = json.loads((folder / contract.CAPTURE_RECORD_FILE).read_text())
        assert record["status"] == "ok", record.get("error")
        process = record["process"]
        assert (process["rank"], process["local_rank"], process["world_size"]) == (rank, rank, 2)
        pids.add(process["pid"])
        trace = json.loads((folder / contract.TORCH_TRACE_FILE).read_text())
        names = {e.get("name", "") for e in trace["traceEvents"]}
        # DDP's gradient all-reduce through c10d, run by gloo on the CPU.
        assert any(n.startswith("c10d::") for n in names), sorted(names)[:50]
        assert any(n.startswith("gloo:") for n in names), sorted(n for n in names if "gloo" in n or "c10d" in n)
    assert len(pids) == 2
