"""How far two ncu captures of the same workload are from each other, kernel by kernel: the run-to-run
difference that no deduplication can be held below (docs/dedup.md, section 6).

  python3 scripts/compare_ncu_runs.py A.csv[.gz] B.csv[.gz] [--repeated N] [--metric M ...]

Both files are ncu raw CSV exports (`ncu --import R --csv --page raw --print-units base`) of the same window,
with the same kernels in the same order (checked by name). Per metric: the duration-weighted median of
|B - A| / |A| (0/0 counts 0, x/0 counts 1, as `--dedup-verify` does), and the duration-weighted median of
|B - A| with its share of A's duration-weighted mean. --repeated N keeps only kernels whose name is launched at
least N times (the layers' kernels, those dedup propagates).
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import sys

DURATION = "gpu__time_duration.sum"
DEFAULT_METRICS = (
    DURATION,
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
)


def read_rows(path: str) -> tuple[list[str], list[list[str]]]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        sys.exit(f"{path}: empty file")
    header = rows[0]
    # The raw page's second line holds units; kernel rows start with their numeric ID.
    return header, [r for r in rows[1:] if r and r[0].isdigit()]


def number(text: str) -> float:
    return float(text.replace(",", "")) if text not in ("", "n/a") else float("nan")


def weighted_median(pairs: list[tuple[float, float]]) -> float:
    pairs.sort()
    total = sum(w for _, w in pairs)
    seen = 0.0
    for value, w in pairs:
        seen += w
        if seen >= total / 2:
            return value
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--repeated", type=int, default=1, help="only kernels whose name is launched this often")
    parser.add_argument("--metric", action="append", help="a metric to compare (repeatable); default: key metrics")
    args = parser.parse_args()
    (ha, ra), (hb, rb) = read_rows(args.a), read_rows(args.b)
    if len(ra) != len(rb):
        sys.exit(f"{args.a} has {len(ra)} kernels, {args.b} {len(rb)}: not the same window")
    name_a, name_b = ha.index("Kernel Name"), hb.index("Kernel Name")
    for i, (x, y) in enumerate(zip(ra, rb)):
        if x[name_a] != y[name_b]:
            sys.exit(f"kernel {i}: {x[name_a][:80]} in {args.a}, {y[name_b][:80]} in {args.b}: not the same window")
    launches = collections.Counter(x[name_a] for x in ra)
    pairs = [(x, y) for x, y in zip(ra, rb) if launches[x[name_a]] >= args.repeated]
    print(f"{len(pairs)} of {len(ra)} kernels compared (names launched >= {args.repeated} times)")
    duration = ha.index(DURATION)
    for metric in args.metric or DEFAULT_METRICS:
        if metric not in ha or metric not in hb:
            print(f"  {metric}: not in both files")
            continue
        ia, ib = ha.index(metric), hb.index(metric)
        rel, absolute, weighted_sum, weights = [], [], 0.0, 0.0
        for x, y in pairs:
            a, b, w = number(x[ia]), number(y[ib]), max(number(x[duration]), 1.0)
            if a != a or b != b:  # NaN: no value on one side
                continue
            rel.append((abs(b - a) / abs(a) if a else (0.0 if b == 0 else 1.0), w))
            absolute.append((abs(b - a), w))
            weighted_sum += w * abs(a)
            weights += w
        if not rel:
            print(f"  {metric}: no kernel has it on both sides")
            continue
        median_abs = weighted_median(absolute)
        mean = weighted_sum / weights
        share = f"{100 * median_abs / mean:.2f} % of the mean {mean:.4g}" if mean else "the mean is 0"
        print(f"  {metric}: median relative difference {100 * weighted_median(rel):.2f} %, "
              f"median absolute {median_abs:.4g} ({share})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
