"""opprof.metricset asks the engine (`opprof metrics --json`): the same list `opprof metrics` prints, the
engine's chip table, and the engine's file:line errors. Needs the built engine (make build)."""

import subprocess

import pytest

from conftest import REPO
from opprof import engine, metricset
from opprof.metricset import MetricSetError, chip_for_device, describe, metric_names_for_chip

ENGINE = REPO / "build" / "opprof"
pytestmark = pytest.mark.skipif(not ENGINE.is_file(), reason="build/opprof not built (make build)")


def engine_text_list(*args):
    """The metric names `opprof metrics` prints, one per line, first column."""
    out = subprocess.run([str(ENGINE), "metrics", *args], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def test_the_engine_is_the_build_trees():
    assert engine.find_engine({}) == ENGINE


@pytest.mark.parametrize("chip", ["gh100", "ga100", "*"])
def test_the_list_equals_the_engines(chip):
    assert metric_names_for_chip(chip) == engine_text_list("--chip", chip)


def test_the_default_set():
    doc = describe("*")
    assert doc["source"] == "<built-in>"
    names = [m["name"] for m in doc["metrics"]]
    assert names[0] == "gpu__time_duration.sum"
    assert len(names) == len(set(names)) == 36
    spec = next(m for m in doc["metrics"] if m["name"] == "launch__registers_per_thread")
    assert spec["aggregate"] == "max" and spec["axis"] == "launch" and spec["reason"]
    assert "gh100" in spec["chips"]
    dram = next(m for m in doc["metrics"] if m["name"] == "dram__bytes_read.sum")
    assert dram["unit"] == "byte"
    assert metric_names_for_chip("") == names  # "" is the chip-independent set too
    # The tensor-core FLOP counters are spelled per chip: gh100 adds its five.
    gh100 = [m["name"] for m in describe("gh100")["metrics"]]
    assert len(gh100) == len(set(gh100)) == 41
    assert "sm__ops_path_tensor_src_bf16_dst_fp32.sum" in gh100


def test_the_default_set_is_valid_for_gh100():
    doc = describe("gh100")
    assert doc["catalog"] is True and doc["problems"] == []


CHIP_ROWS = (
    "# comment line\n"
    "gpu__time_duration.sum\tsum\ttime\t*\t\tduration\tns\n"
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active\twmean\ttensor\t*\t\ttensor pipe\t%\tduration\n"
    "dram__bytes_read.sum\tsum\tdram\t*\t\tDRAM\tbyte\n"
    "\n"
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active\twmean\ttensor\tgh100\t"
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active\tHopper GMMA\t%\tduration\n"
    "sm__inst_executed_pipe_tma.sum\tsum\tmemory\tgh100\t\tTMA, Hopper only\tinst\n"
    "lts__t_bytes.sum\tsum\tl2\tga100\tdram__bytes_read.sum\tAmpere only\tbyte\n"
)


def test_a_users_file_with_chip_rows(tmp_path):
    path = tmp_path / "m.tsv"
    path.write_text(CHIP_ROWS)
    assert metric_names_for_chip("gh100", path) == [
        "gpu__time_duration.sum",
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",  # in the replaced row's place
        "dram__bytes_read.sum",
        "sm__inst_executed_pipe_tma.sum",  # no replaces: appended
    ]
    ampere = metric_names_for_chip("ga100", path)
    assert ampere == [
        "gpu__time_duration.sum",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        "lts__t_bytes.sum",
    ]
    assert metric_names_for_chip("ad102", path) == ampere[:2] + ["dram__bytes_read.sum"]
    assert metric_names_for_chip("gh100", path) == engine_text_list("--chip", "gh100", "--metrics", str(path))
    rows = {m["name"]: m for m in describe("*", path)["metrics"]}
    assert "gh100" not in rows["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"]["chips"]
    assert rows["dram__bytes_read.sum"]["line"] == 4


@pytest.mark.parametrize(
    "text, message",
    [
        ("gpu__time_duration.sum\tsum\n", ":1:1: expected tab-separated columns"),
        ("# c\ngpu__time_duration.sum\tmean\ttime\n", ":2:1: unknown aggregate 'mean'"),
        ("bad name.sum\tsum\ttime\n", ":1:1: bad metric name"),
        ("a.sum\tsum\tx\t*\t\t\t-\na.sum\tsum\tx\t*\t\t\t-\n", ":2:1: metric a.sum is listed twice"),
        ("# only a comment\n\n", ": the metric set names no metric"),
    ],
)
def test_bad_files_give_the_engines_error(tmp_path, text, message):
    path = tmp_path / "bad.tsv"
    path.write_text(text)
    with pytest.raises(MetricSetError) as info:
        metric_names_for_chip("gh100", path)
    assert str(info.value).startswith(str(path) + message)


def test_chip_for_device():
    assert chip_for_device("NVIDIA H200", 9, 0) == "gh100"
    assert chip_for_device("NVIDIA A100-SXM4-80GB", 8, 0) == "ga100"
    assert chip_for_device("NVIDIA GeForce RTX 4090", 8, 9) == "ad102"
    assert chip_for_device("NVIDIA H100 PCIe") == "gh100"
    assert chip_for_device("Some GPU") == ""


def test_a_missing_engine_names_where_it_looked(monkeypatch):
    monkeypatch.setenv(engine.ENV_BIN, "/nonexistent/opprof")
    with pytest.raises(engine.EngineNotFound, match="OPPROF_BIN=/nonexistent/opprof"):
        metric_names_for_chip("gh100")


def test_command_line_prints_one_comma_separated_list(capsys):
    assert metricset.main(["--device-name", "NVIDIA H200", "--compute-capability", "9.0", "--check"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.split(",") == metric_names_for_chip("gh100")


def test_command_line_check_fails_on_unknown_names(tmp_path, capsys):
    path = tmp_path / "m.tsv"
    path.write_text("gpu__time_duration.sum\tsum\ttime\t*\t\t\tns\nnot__a_metric.sum\tsum\tx\t*\t\t\t-\n")
    assert metricset.main(["--file", str(path), "--chip", "gh100", "--check"]) == 1
    assert f"{path}:2: not__a_metric.sum: unknown metric for gh100" in capsys.readouterr().err
    assert metricset.main(["--file", str(path), "--chip", "gh100"]) == 0  # without --check: a warning


def test_the_engine_lookup_order():
    repo = REPO
    assert engine.candidate_paths({engine.ENV_BIN: "/x/opprof"}) == [engine.Path("/x/opprof")]
    paths = engine.candidate_paths({"OPPROF_BUILD_DIR": "build-mine"})
    assert paths[:3] == [repo / "build-mine" / "opprof", repo / "build" / "opprof", repo / "build-gpu" / "opprof"]
    assert paths[3].name == "opprof" and paths[3].parent.name in ("bin", "Scripts")
