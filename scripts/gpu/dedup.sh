#!/usr/bin/env bash
# Layer dedup on the H200 (issue 14's figures), run from the repository root on the GPU machine:
#
#   bash scripts/gpu/dedup.sh
#
# Builds opprof (as scripts/capture_field_fixtures.sh does), then, back to back on this machine, `opprof profile`
# with and without --dedup on GPT-2 small (examples/gpt2.py, batch 4 x 128, eager and compiled) and a training
# step (examples/train_lm.py --model gpt2, eager, AdamW), opprof's default metric set, --clock-control none:
# kernels replayed and pass-B wall time, per-operator key metrics with vs without dedup
# (scripts/gpu/compare_dedup.py), --dedup-verify 3 deviations (eager), the NVTX selection on eager GPT-2
# (--dedup-selection nvtx_modules), and one deduplicated capture saved as
# the fixture tests/fixtures/dedup/gpt2_eager (timeline, dedup'd ncu CSV, structure file, plan).
# Runs in order of importance within a wall-time budget for the whole script, build included (TOTAL_S,
# default 345 s); a run that would not fit is skipped, a run still going at the end is stopped (SIGINT: opprof
# stops ncu and keeps what it has). Whatever finished is written under $OUT on any exit (a trap).
# Writes $OUT/summary.txt and $OUT/dedup.tgz (logs, reports, comparisons, the fixture).
set -uo pipefail
REPO=$(pwd)
OUT=${OUT:-/tmp/dedup_out}
mkdir -p "$OUT"
W=/tmp/dedup_work
rm -rf "$W" && mkdir -p "$W"
PYTHON=${PYTHON:-python3}
TOTAL_S=${TOTAL_S:-345}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
SUMMARY="$W/summary.txt"
say() { printf '[dedup %s +%ds] %s\n' "$(date -u +%H:%M:%S)" "$SECONDS" "$*" | tee -a "$SUMMARY" >&2; }
finish() {
  cp "$SUMMARY" "$OUT/summary.txt" 2>/dev/null
  tar -czf "$OUT/dedup.tgz" -C "$W" --exclude='*/cache' --exclude='*/inductor' --exclude='*/inductor_counters' \
    --exclude='*.ncu-rep' . 2>/dev/null
}
trap finish EXIT

# A dry run on a machine without a GPU: OPPROF_PREBUILT names a built opprof, PATH leads to stand-ins for
# python3 and ncu, PROFILE_ARGS adds options (--backend torch).
if [[ -n "${OPPROF_PREBUILT:-}" ]]; then
  OPPROF=$OPPROF_PREBUILT
else
  say "build"
  cmake -S "$REPO" -B "$REPO/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$REPO/.deps/usr" \
    -DOPPROF_BUILD_TESTS=OFF -DOPPROF_BUILD_BENCH=OFF -DOPPROF_TORCH_PYTHON="$(command -v "$PYTHON")" >"$W/build.log" 2>&1 &&
    timeout 150 cmake --build "$REPO/build-gpu" -j 16 >>"$W/build.log" 2>&1 || {
    say "build failed"; tail -30 "$W/build.log" | tee -a "$SUMMARY"; exit 1; }
  OPPROF="$REPO/build-gpu/opprof"
fi
say "built"
left() { echo $((TOTAL_S - SECONDS)); }

# run NAME EXPECTED_S ARGS... : one `opprof profile` into $W/NAME, skipped when it would not fit.
run() {
  local name=$1 expected=$2
  shift 2
  if (($(left) < expected)); then
    say "skip $name: $(left) s of the budget left, it needs about $expected s"
    return 1
  fi
  local t0=$SECONDS
  timeout --signal=INT --kill-after=20 "$(left)" "$OPPROF" profile --clock-control none ${PROFILE_ARGS:-} -o "$W/$name" "$@" >"$W/$name.out" 2>"$W/$name.err"
  local rc=$?
  say "$name: rc $rc in $((SECONDS - t0)) s; $(grep -h 'dedup \(layers\|kernels\)\|pass B:' "$W/$name.err" | head -2 | tr '\n' ' ')"
  return $rc
}
compare() {  # compare NAME FULL DEDUP
  if [[ -f "$W/$2/profile.db" && -f "$W/$3/profile.db" ]]; then
    "$PYTHON" "$REPO/scripts/gpu/compare_dedup.py" "$W/$2/profile.db" "$W/$3/profile.db" --name "$1" >>"$SUMMARY" 2>&1
  else
    say "compare $1: a profile is missing ($2 or $3)"
  fi
}

GPT2="$REPO/examples/gpt2.py"
TRAIN=(-- "$PYTHON" "$REPO/examples/train_lm.py" --model gpt2 --steps 1)
run eager_layers 50 "$GPT2" --compile eager --warmup 1 --dedup layers
run eager_off 115 "$GPT2" --compile eager --warmup 1 --dedup off
compare "GPT-2 small eager, inference" eager_off eager_layers
run eager_verify 55 "$GPT2" --compile eager --warmup 1 --dedup layers --dedup-verify 3
compare "GPT-2 small eager, --dedup-verify 3" eager_off eager_verify
run train_layers 75 --dedup layers "${TRAIN[@]}"
run compiled_layers 80 "$GPT2" --compile inductor --warmup 1 --dedup layers
run compiled_off 150 "$GPT2" --compile inductor --warmup 1 --dedup off
compare "GPT-2 small compiled (Inductor default), inference" compiled_off compiled_layers
run eager_nvtx 50 "$GPT2" --compile eager --warmup 1 --dedup layers --dedup-selection nvtx_modules
compare "GPT-2 small eager, --dedup-selection nvtx_modules (module hooks + NVTX exclude)" eager_off eager_nvtx
# The training step without dedup replays every kernel (about 1500): cut at the budget's end if it must be.
if (($(left) > 60)); then
  run train_off 60 --dedup off "${TRAIN[@]}"
  rc=$?
  if [[ -f "$W/train_off/profile.db" ]]; then
    compare "GPT-2 small training step (AdamW), eager" train_off train_layers
  else
    n=$(grep -c '==PROF== Profiling' "$W/train_off/ncu.log" 2>/dev/null || echo 0)
    total=$(grep -o '[0-9]* of [0-9]* kernels to replay' "$W/train_layers.err" | head -1 | awk '{print $3}')
    say "train_off cut by the budget (rc $rc): ncu replayed $n kernels before; pass B of all ${total:-?} kernels" \
        "extrapolated from its log's timestamps in train_off_rate.txt"
    "$PYTHON" - "$W/train_off" "${total:-0}" >>"$SUMMARY" 2>&1 <<'EOF'
import os, sys
d, total = sys.argv[1], int(sys.argv[2])
log = os.path.join(d, "ncu.log")
n = sum(1 for line in open(log, errors="replace") if line.startswith("==PROF== Profiling")) if os.path.exists(log) else 0
start = os.path.getmtime(os.path.join(d, "pass_a.log")) if os.path.exists(os.path.join(d, "pass_a.log")) else None
end = os.path.getmtime(log) if os.path.exists(log) else None
if n and start and end and end > start:
    rate = (end - start) / n
    print(f"  train_off: {n} kernels in {end - start:.0f} s of pass B (incl. its start-up): {rate:.3f} s per kernel; "
          f"all {total} kernels would take about {rate * total:.0f} s (EXTRAPOLATED, not measured)")
else:
    print(f"  train_off: no rate ({n} kernels profiled)")
EOF
  fi
else
  say "skip train_off: $(left) s left"
fi
for name in train_layers eager_nvtx; do
  [[ -f "$W/$name/report.json" ]] && "$PYTHON" -c "
import json,sys; r=json.load(open('$W/$name/report.json')); d=r['dedup']; m=r['metadata']
print('  $name: dedup', {k: d.get(k) for k in ('mode','selection','classes','instances','kernels','kernels_replayed','kernels_propagated','instances_replayed_in_full')}, 'pass B', m.get('timing.pass_b_s'), 's')
for f in d.get('replayed_in_full', [])[:5]: print('    in full:', f['instance'], f['why'][:200])
" >>"$SUMMARY" 2>&1
done

# The fixture: the eager dedup capture (verify run when it exists: its CSV also holds the verify duplicates).
src=$W/eager_verify
[[ -f "$src/profile.db" ]] || src=$W/eager_layers
F=$W/fixture/gpt2_eager
mkdir -p "$F"
for f in trace.opprof trace.json capture.json opprof_structure.json dedup_plan.json ncu.csv report.txt report.json; do
  [[ -f "$src/$f" ]] && cp "$src/$f" "$F/"
done
for f in "$F"/trace.json "$F"/ncu.csv; do [[ -f "$f" ]] && gzip -9 -n -f "$f"; done
grep -h 'opprof profile\|dedup' "$src/../$(basename "$src").err" >"$F/profile_stderr.txt" 2>/dev/null
say "fixture from $(basename "$src"): $(ls "$F" | tr '\n' ' ')"

say "done; budget left $(left) s"
cat "$SUMMARY"
