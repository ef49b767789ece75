#!/usr/bin/env bash
# Step-time overhead of opprof's capture backends on GPT-2 small (scripts/overhead_gpt2.py), on a GPU:
# eager and torch.compile, each with nothing, torch.profiler (+ module hooks) and the opprof tracer
# (+ operator ranges + NVTX module ranges) in interleaved rounds, then the tracer's parts (bare; with emit_nvtx
# and global hooks, the former pass A); one process per run. Prints one table: median step time over 50
# steps and overhead vs none. Then the CUDA-graph figure: torch.compile(mode="reduce-overhead")
# under the tracer, how many replayed kernels got a capture-time stack.
#   scripts/overhead_gpt2.sh   (OPPROF_BUILD_DIR=build-gpu, OUT=<dir> keeps logs, PYTHON=python3, ROUNDS=2,
#                               REDUCE_OVERHEAD=0 skips the CUDA-graph check)
# The compiled runs share one Inductor/Triton cache, so only the first one compiles.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${OPPROF_BUILD_DIR:-build-gpu}
[[ "$BUILD" = /* ]] || BUILD=$REPO/$BUILD
PY=${PYTHON:-python3}
DEST=${OUT:-$(mktemp -d)}/overhead_gpt2
mkdir -p "$DEST"
TRACER=$BUILD/tracer/libopprof_tracer.so
DUMP=$BUILD/tracer/opprof_trace_dump
for f in "$TRACER" "$DUMP"; do [[ -e "$f" ]] || { echo "overhead_gpt2: missing $f (build first)"; exit 2; }; done
export TORCHINDUCTOR_CACHE_DIR=$DEST/cache/inductor TRITON_CACHE_DIR=$DEST/cache/triton
export TORCHINDUCTOR_FX_GRAPH_CACHE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

run_one() {  # run_one COMPILE MODE: prints the script's "overhead ..." line, log in $DEST
  local compile=$1 mode=$2 log=$DEST/$1_$2.log
  if [[ "$mode" = tracer* ]]; then
    CUDA_INJECTION64_PATH=$TRACER NVTX_INJECTION64_PATH=$TRACER OPPROF_TRACE_FILE=$DEST/${compile}_tracer.opprof \
      OPPROF_TRACE_WINDOW=1 "$PY" "$REPO/scripts/overhead_gpt2.py" --compile "$compile" --mode "$mode" > "$log" 2>&1
  else
    "$PY" "$REPO/scripts/overhead_gpt2.py" --compile "$compile" --mode "$mode" > "$log" 2>&1
  fi
  local rc=$?
  if [ $rc -ne 0 ]; then echo "overhead_gpt2: $compile/$mode failed (rc=$rc): $(tail -2 "$log" | tr '\n' ' ' | cut -c1-300)" >&2; fi
  grep '^overhead ' "$log" | tail -1
}
field() { echo "$1" | grep -o "$2=[0-9.]*" | cut -d= -f2; }

# The machine's load drifts over minutes: the three compared modes run in ROUNDS interleaved rounds and each
# gets the median of its rounds' medians; the tracer's parts run once, after them.
ROUNDS=${ROUNDS:-2}
MAIN_MODES="none torch_profiler tracer"
PART_MODES="tracer_bare tracer_emit_nvtx"
MODES="$MAIN_MODES $PART_MODES"
declare -A median rounds
status=0
run_mode() {  # run_mode COMPILE MODE: appends the run's median to rounds[COMPILE/MODE]
  local t0=$SECONDS line m
  line=$(run_one "$1" "$2")
  m=$(field "$line" median_ms)
  [ -n "$m" ] || status=1
  rounds[$1/$2]="${rounds[$1/$2]:-} $m"
  echo "overhead_gpt2 ran $1/$2 in $((SECONDS - t0)) s: ${line:-FAILED}"
}
for compile in eager inductor; do
  for ((r = 1; r <= ROUNDS; r++)); do
    for mode in $MAIN_MODES; do run_mode "$compile" "$mode"; done
  done
  for mode in $PART_MODES; do run_mode "$compile" "$mode"; done
  for mode in $MODES; do
    median[$compile/$mode]=$(echo ${rounds[$compile/$mode]:-} | tr ' ' '\n' | sort -n |
      awk '{ v[NR] = $1 } END { if (NR) printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  done
done
echo "== GPT-2 small (batch 4 x 128), median step over 50 steps after 10 warm-ups ($MAIN_MODES: median of $ROUNDS rounds)"
printf "%-9s %-17s %11s %10s   %s\n" compile mode median_ms overhead "round medians"
for compile in eager inductor; do
  base=${median[$compile/none]:-}
  for mode in $MODES; do
    m=${median[$compile/$mode]:-}
    if [ -n "$m" ] && [ -n "$base" ]; then
      pct=$(awk -v m="$m" -v b="$base" 'BEGIN { printf "%+.1f%%", (m - b) / b * 100 }')
    else
      pct="-"
    fi
    printf "%-9s %-17s %11s %10s  %s\n" "$compile" "$mode" "${m:-failed}" "$pct" "${rounds[$compile/$mode]:-}"
  done
done

[ "${REDUCE_OVERHEAD:-1}" = 1 ] || { echo "overhead_gpt2 logs in $DEST"; exit $status; }
echo "== CUDA graphs: torch.compile(mode=\"reduce-overhead\") under the tracer, 1 step in the window"
log=$DEST/reduce_overhead.log
CUDA_INJECTION64_PATH=$TRACER NVTX_INJECTION64_PATH=$TRACER OPPROF_TRACE_FILE=$DEST/reduce_overhead.opprof \
  OPPROF_TRACE_WINDOW=1 "$PY" "$REPO/scripts/overhead_gpt2.py" --compile inductor --mode tracer --reduce-overhead-check \
  > "$log" 2>&1 || { echo "reduce-overhead run failed: $(tail -2 "$log" | tr '\n' ' ' | cut -c1-300)"; status=1; }
"$DUMP" "$DEST/reduce_overhead.opprof" --first 0 > "$DEST/reduce_overhead.dump" 2>&1
grep -E "^(summary|records\.(kernel|capture_launch|graph_node|graph_node_clone)=|meta graph\.)" "$DEST/reduce_overhead.dump"
total=$(grep -o 'meta graph.activities=[0-9]*' "$DEST/reduce_overhead.dump" | cut -d= -f2)
with=$(grep -o 'meta graph.activities_with_capture_stack=[0-9]*' "$DEST/reduce_overhead.dump" | cut -d= -f2)
echo "cuda_graph_attribution replayed_kernels=${total:-?} with_capture_stack=${with:-?}"
echo "overhead_gpt2 logs in $DEST"
exit $status
