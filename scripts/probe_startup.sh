#!/usr/bin/env bash
# What pass B pays before its window (issue 14), on a GPU machine: the phases of GPT-2's start-up
# (scripts/probe_startup.py) plainly, under ncu with nothing profiled (--profile-from-start off and no
# cudaProfilerStart), with --target-processes application-only, and the imports under ncu with -X importtime.
# Writes $OUT/startup_summary.tsv (case, phase, seconds) and the cases' logs as $OUT/startup_logs.tgz (the
# device returns few files).
set -uo pipefail
py=${PYTHON:-python3}
out=$(mktemp -d)
trap 'cp "$out/summary.tsv" "${OUT:-/tmp}/startup_summary.tsv"; tar -czf "${OUT:-/tmp}/startup_logs.tgz" -C "$out" .' EXIT
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
probe=scripts/probe_startup.py
printf 'case\tphase\tseconds\n' > "$out/summary.tsv"
case_() {
  local name=$1; shift
  local t0=$(date +%s%N)
  "$@" > "$out/$name.out" 2> "$out/$name.err"
  local rc=$? t1=$(date +%s%N)
  grep -P '^\w+\t[0-9.]+$' "$out/$name.out" | sed "s/^/$name\t/" >> "$out/summary.tsv"
  printf '%s\twall_rc%s\t%d.%03d\n' "$name" "$rc" $(( (t1 - t0) / 1000000000 )) $(( (t1 - t0) / 1000000 % 1000 )) >> "$out/summary.tsv"
}
NCU=(ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum)
case_ plain1 $py $probe
case_ plain2 $py $probe
case_ ncu_all1 "${NCU[@]}" --target-processes all $py $probe
case_ ncu_all2 "${NCU[@]}" --target-processes all $py $probe
case_ ncu_app "${NCU[@]}" --target-processes application-only $py $probe
case_ ncu_importtime "${NCU[@]}" --target-processes all $py -X importtime $probe
case_ plain_importtime $py -X importtime $probe
cat "$out/summary.tsv"
