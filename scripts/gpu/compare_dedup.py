"""Compares two profile databases of the same workload, one without dedup and one with (scripts/gpu/dedup.sh):
kernels replayed and pass-B wall time, and each operator's time-weighted key metrics (the throughput
percentages, DRAM bytes, occupancy), with the largest relative difference. Prints one block of text.

Each operator over 5 % says how much of its kernel time took propagated counters in DEDUP.db: at 0 % every one
of its kernels was replayed itself in both captures, and the difference is between two runs of the workload,
not made by dedup (run the script on two captures without dedup to see that difference alone).

  python scripts/gpu/compare_dedup.py FULL.db DEDUP.db [--name NAME]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys

KEY_METRICS = (
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
)
PCT_FLOOR = 0.5  # percentage points: an idle pipe's 0.1 % vs 0.2 % is no difference worth a ratio
# DRAM bytes are compared as read + write (operators.dram_bytes): the write side alone is a few KB where the
# outputs stay in the 50 MB L2, and varies by more than itself between replays of one kernel.
BYTES_FLOOR = 1e6
# A read + write difference over 5 % names both parts, so that a change in the reads (what the kernel did)
# can be told from one in the writes (what left L2 during it).
DRAM_PARTS = ("dram__bytes_read.sum", "dram__bytes_write.sum")


def meta(db: sqlite3.Connection) -> dict[str, str]:
    return dict(db.execute("SELECT key, value FROM meta"))


def operator_metrics(db: sqlite3.Connection) -> dict[str, dict[str, float]]:
    rows = db.execute(
        "SELECT g.key, g.metric, g.value, o.time_share FROM group_metrics g "
        "JOIN operators o ON g.group_kind = 'operator' AND g.group_id = o.id")
    out: dict[str, dict[str, float]] = {}
    for key, metric, value, share in rows:
        if metric in KEY_METRICS and value is not None:
            out.setdefault(key, {"_share": share})[metric] = value
        elif metric in DRAM_PARTS and value is not None:  # shown beside a read + write difference, not compared
            out.setdefault(key, {"_share": share})["_" + metric] = value
    for key, share, dram_bytes in db.execute("SELECT key, time_share, dram_bytes FROM operators"):
        if dram_bytes is not None:
            out.setdefault(key, {"_share": share})["dram_bytes (read + write)"] = dram_bytes
    return out


def propagated_share(db: sqlite3.Connection) -> dict[str, float]:
    """Per operator: the share of its kernel time whose counters were copied from another kernel."""
    rows = db.execute(
        "SELECT a.op, SUM(k.duration_ns), SUM(CASE WHEN c.propagated THEN k.duration_ns ELSE 0 END) "
        "FROM attribution a JOIN kernels k ON k.id = a.kernel_id "
        "JOIN (SELECT kernel_id, MAX(counters_from IS NOT NULL) AS propagated FROM kernel_metrics "
        "GROUP BY kernel_id) c ON c.kernel_id = a.kernel_id WHERE a.op IS NOT NULL GROUP BY a.op")
    return {op: (prop / total if total else 0.0) for op, total, prop in rows}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("full")
    parser.add_argument("dedup")
    parser.add_argument("--name", default="")
    args = parser.parse_args()
    full, dedup = sqlite3.connect(args.full), sqlite3.connect(args.dedup)
    mf, md = meta(full), meta(dedup)
    rows_f = int(mf.get("ncu.rows", "0"))
    rows_d = int(md.get("ncu.rows", "0"))
    tf, td = float(mf.get("timing.pass_b_s", "nan")), float(md.get("timing.pass_b_s", "nan"))
    print(f"== {args.name}")
    print(f"  kernels in the window: {md.get('dedup.kernels', '?')}; dedup {md.get('dedup.mode')} "
          f"({md.get('dedup.selection')}): {md.get('dedup.classes')} classes, {md.get('dedup.instances')} instances, "
          f"{md.get('dedup.instances_in_full')} replayed in full, {md.get('dedup.kernels_propagated')} kernels propagated")
    print(f"  ncu rows (kernels replayed): without dedup {rows_f}, with {rows_d}: "
          f"{rows_f / rows_d if rows_d else float('nan'):.2f}x fewer")
    print(f"  pass B wall time: without dedup {tf:.1f} s, with {td:.1f} s: {tf / td if td else float('nan'):.2f}x less")
    print(f"  replay passes per kernel (first kernel): {md.get('ncu.passes_first_kernel', '?')}")
    of, od = operator_metrics(full), operator_metrics(dedup)
    propagated = propagated_share(dedup)
    worst, where, compared = 0.0, "", 0
    worst_main, where_main = 0.0, ""  # operators with >= 5 % of the kernel time
    lines = []
    for op, metrics in sorted(of.items(), key=lambda kv: -kv[1]["_share"]):
        other = od.get(op, {})
        for metric, a in metrics.items():
            if metric.startswith("_") or metric not in other:
                continue
            b = other[metric]
            floor = PCT_FLOOR if "pct" in metric else BYTES_FLOOR
            rel = abs(a - b) / max(abs(a), floor)
            compared += 1
            if rel > worst:
                worst, where = rel, f"{op} {metric}: {a:.4g} vs {b:.4g}"
            if metrics["_share"] >= 0.05 and rel > worst_main:
                worst_main, where_main = rel, f"{op} {metric}: {a:.4g} vs {b:.4g}"
            if rel > 0.05:
                parts = ""
                if metric.startswith("dram_bytes"):
                    parts = "".join(
                        f"; {name.split('.')[0].removeprefix('dram__bytes_')} "
                        f"{metrics.get('_' + name, float('nan')):.4g} vs {other.get('_' + name, float('nan')):.4g}"
                        for name in DRAM_PARTS)
                lines.append(f"    over 5 %: {op} ({100 * metrics['_share']:.1f} % of time) {metric}: "
                             f"{a:.4g} without, {b:.4g} with ({100 * rel:.1f} %; "
                             f"{100 * propagated.get(op, 0.0):.0f} % of its time propagated{parts})")
    print(f"  per-operator key metrics: {compared} values over {len(of)} operators; largest difference "
          f"{100 * worst:.2f} % ({where}); over the operators with >= 5 % of the time {100 * worst_main:.2f} % "
          f"({where_main})")
    for line in lines[:15]:
        print(line)
    verify = list(dedup.execute("SELECT metric, pairs, median_rel, max_rel FROM dedup_verify ORDER BY metric"))
    if verify:
        print(f"  --dedup-verify {md.get('dedup.verify')}: per metric, duration-weighted median |relative deviation| "
              "of duplicates vs representative")
        for metric, pairs, med, mx in verify:
            print(f"    {metric:<72} {100 * med:7.2f} %  (max {100 * mx:.1f} %, {pairs} kernels)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
