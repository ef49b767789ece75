"""The Python reader of the engine's metric set agrees with the C++ semantics (metric_set.cpp)."""

import pytest

from conftest import DATA_DIR
from opprof import metricset
from opprof.metricset import MetricSetError, chip_for_device, load_metric_set, parse_metric_set


def test_default_set_from_the_repository():
    metric_set = load_metric_set()
    assert metric_set.source == str(DATA_DIR / "metrics_default.tsv")
    names = metric_set.for_chip("*").names()
    assert names[0] == "gpu__time_duration.sum"
    assert len(names) == len(set(names)) == 36
    # The tensor-core FLOP counters are spelled per chip: gh100 adds its five.
    gh100 = metric_set.for_chip("gh100").names()
    assert len(gh100) == len(set(gh100)) == 41
    assert "sm__ops_path_tensor_src_bf16_dst_fp32.sum" in gh100
    spec = metric_set.find("launch__registers_per_thread")
    assert spec.aggregate == "max" and spec.axis == "launch" and spec.reason


def test_default_set_names_are_in_the_gh100_catalog():
    names = metricset.metric_names_for_chip("gh100")
    assert metricset.unknown_metrics(names, "gh100") == []
    assert metricset.unknown_metrics(["sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"], "gh100") == [
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"
    ]
    assert metricset.unknown_metrics(["made_up__metric.sum"], "no_such_chip") == []  # no catalog: nothing to check


CHIP_ROWS = (
    "# comment line\n"
    "gpu__time_duration.sum\tsum\ttime\t*\t\tduration\n"
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active\twmean\ttensor\t*\t\ttensor pipe\n"
    "dram__bytes_read.sum\tsum\tdram\n"
    "\n"
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active\twmean\ttensor\tgh100\t"
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active\tHopper GMMA\n"
    "sm__inst_executed_pipe_tma.sum\tsum\tmemory\tgh100\t\tTMA, Hopper only\n"
    "lts__t_bytes.sum\tsum\tl2\tga100\tdram__bytes_read.sum\tAmpere only\n"
)


def test_replaces_row_takes_the_place_of_the_named_metric():
    metric_set = parse_metric_set(CHIP_ROWS, "test.tsv")
    assert metric_set.names()[:3] == [
        "gpu__time_duration.sum",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        "dram__bytes_read.sum",
    ]
    hopper = metric_set.for_chip("gh100").names()
    assert hopper == [
        "gpu__time_duration.sum",
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",  # in the replaced row's place
        "dram__bytes_read.sum",
        "sm__inst_executed_pipe_tma.sum",  # no replaces: appended
    ]
    ampere = metric_set.for_chip("ga100").names()
    assert ampere == [
        "gpu__time_duration.sum",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        "lts__t_bytes.sum",
    ]
    assert metric_set.for_chip("ad102").names() == ampere[:2] + ["dram__bytes_read.sum"]


def test_missing_columns_default_like_the_engine():
    spec = parse_metric_set("dram__bytes_read.sum\tsum\tdram\n", "x").metrics[0]
    assert (spec.arch, spec.replaces, spec.reason, spec.line) == ("*", "", "", 1)


@pytest.mark.parametrize(
    "text, message",
    [
        ("gpu__time_duration.sum\tsum\n", "expected tab-separated columns"),
        ("gpu__time_duration.sum\tmean\ttime\n", "unknown aggregate 'mean'"),
        ("bad name.sum\tsum\ttime\n", "bad metric name"),
        ("a.sum\tsum\tx\na.sum\tsum\tx\n", "listed twice"),
        ("# only a comment\n\n", "names no metric"),
    ],
)
def test_bad_files_are_rejected_with_the_line(text, message):
    with pytest.raises(MetricSetError, match=message):
        parse_metric_set(text, "bad.tsv")


def test_a_chip_row_may_repeat_a_default_name():
    # The engine only rejects duplicates among "*" rows; a chip row naming an existing metric is legal.
    metric_set = parse_metric_set("a.sum\tsum\tx\na.sum\tmax\tx\tgh100\ta.sum\n", "x")
    assert [m.aggregate for m in metric_set.for_chip("gh100").metrics] == ["max"]


def test_chip_for_device():
    assert chip_for_device("NVIDIA H200", 9, 0) == "gh100"
    assert chip_for_device("NVIDIA A100-SXM4-80GB", 8, 0) == "ga100"
    assert chip_for_device("NVIDIA GeForce RTX 4090", 8, 9) == "ad102"
    assert chip_for_device("NVIDIA H100 PCIe") == "gh100"
    assert chip_for_device("Some GPU") == ""


def test_data_dir_override(tmp_path, monkeypatch):
    (tmp_path / "metrics_default.tsv").write_text("only__metric.sum\tsum\tx\n")
    monkeypatch.setenv("OPPROF_DATA_DIR", str(tmp_path))
    assert metricset.metric_names_for_chip("") == ["only__metric.sum"]


def test_missing_data_file_names_the_places_searched(monkeypatch):
    with pytest.raises(FileNotFoundError, match="OPPROF_DATA_DIR"):
        metricset.find_data_file("no_such_file.tsv")


def test_command_line_prints_one_comma_separated_list(capsys):
    assert metricset.main(["--device-name", "NVIDIA H200", "--compute-capability", "9.0", "--check"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.split(",") == metricset.metric_names_for_chip("gh100")


def test_command_line_check_fails_on_unknown_names(tmp_path, capsys):
    path = tmp_path / "m.tsv"
    path.write_text("gpu__time_duration.sum\tsum\ttime\nnot__a_metric.sum\tsum\tx\n")
    assert metricset.main(["--file", str(path), "--chip", "gh100", "--check"]) == 1
    assert "not__a_metric.sum" in capsys.readouterr().err
