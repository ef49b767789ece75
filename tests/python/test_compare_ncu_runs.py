"""scripts/compare_ncu_runs.py on two real H200 captures of eager GPT-2 without dedup (the run-to-run baseline
of docs/dedup.md, section 6), and its refusal of captures of different windows."""

import csv
import gzip
import subprocess
import sys

from conftest import REPO

SCRIPT = REPO / "scripts" / "compare_ncu_runs.py"
EAGER = REPO / "tests" / "fixtures" / "dedup" / "gpt2_eager"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=120)


def figure(output, metric):
    line = next(l for l in output.splitlines() if l.strip().startswith(metric + ":"))
    return float(line.split("median relative difference ")[1].split(" %")[0])


def test_two_runs_of_the_same_window_differ_little_but_on_dram_bytes_written():
    r = run(EAGER / "mangled_off" / "ncu.csv.gz", EAGER / "off" / "ncu.csv.gz", "--repeated", "12")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("205 of 219 kernels compared")
    assert figure(r.stdout, "gpu__time_duration.sum") < 2
    assert figure(r.stdout, "dram__bytes_read.sum") == 0
    assert figure(r.stdout, "dram__bytes_write.sum") > 50  # the counter that does not repeat between runs


def test_the_same_capture_against_itself_differs_by_nothing():
    capture = EAGER / "off" / "ncu.csv.gz"
    r = run(capture, capture)
    assert r.returncode == 0, r.stderr
    assert all(figure(r.stdout, m) == 0 for m in ("gpu__time_duration.sum", "dram__bytes_write.sum"))


def test_captures_of_different_windows_are_refused(tmp_path):
    r = run(EAGER / "off" / "ncu.csv.gz", REPO / "tests" / "fixtures" / "gpt2_compiled" / "ncu.csv.gz")
    assert r.returncode != 0 and "not the same window" in r.stderr
    # Same length, another kernel at one position.
    with gzip.open(EAGER / "off" / "ncu.csv.gz", "rt", newline="") as f:
        rows = list(csv.reader(f))
    rows[5][rows[0].index("Kernel Name")] = "another_kernel"
    other = tmp_path / "other.csv"
    with open(other, "w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)
    r = run(EAGER / "off" / "ncu.csv.gz", other)
    assert r.returncode != 0 and "not the same window" in r.stderr, r.stdout
