#!/usr/bin/env bash
# Does ncu's per-launch-config filter key a launch configuration by the name --kernel-name-base sets?
# Runs scripts/probe_ncu_selection.py (4 identical blocks) under `--filter-mode per-launch-config
# --launch-count 1` with each base (function, demangled, mangled), and once without a filter, printing
# names as demangled and as mangled; the unfiltered CSVs give the count each key predicts (grouped by name,
# grid and block). Writes $OUT/name_base_summary.tsv and every CSV and log in $OUT/name_base.tgz.
set -u
out=/tmp/name_base; rm -rf "$out"; mkdir -p "$out"
export TORCHINDUCTOR_CACHE_DIR=/tmp/probe_inductor TRITON_CACHE_DIR=/tmp/probe_triton
py="python3 scripts/probe_ncu_selection.py"
source "$(dirname "$0")/probe_ncu_common.sh"
for mode in eager_fwd eager_train; do
  probe ${mode}_all_demangled -- $mode none
  probe ${mode}_all_mangled --print-kernel-base mangled -- $mode none
  for base in function demangled mangled; do
    probe ${mode}_perconfig_$base --filter-mode per-launch-config --launch-count 1 --kernel-name-base $base -- $mode none
  done
done
# The count each key predicts from the unfiltered captures: distinct (name, grid, block) per print base.
python3 - "$out" >> "$out/summary.tsv" <<'PY'
import csv, sys, pathlib
for f in sorted(pathlib.Path(sys.argv[1]).glob("*_all_*.csv")):
    rows = [r for r in csv.reader(l for l in open(f) if l.startswith('"')) if len(r) > 12]
    head = rows[0]
    body = [r for r in rows[1:] if r[head.index("Metric Name")] == "gpu__time_duration.sum"]
    key = lambda r: (r[head.index("Kernel Name")], r[head.index("Grid Size")], r[head.index("Block Size")])
    print(f"predicted_by_full_name:{f.stem}\t-\t{len(set(map(key, body)))}\tof {len(body)}")
PY
cp "$out/summary.tsv" "${OUT:-/tmp}/name_base_summary.tsv"
tar -czf "${OUT:-/tmp}/name_base.tgz" -C /tmp name_base
cat "$out/summary.tsv"
