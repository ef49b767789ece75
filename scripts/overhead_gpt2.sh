#!/usr/bin/env bash
# Step-time overhead of opprof's capture backends on GPT-2 small (scripts/overhead_gpt2.py), on a GPU:
# eager and torch.compile, each with nothing, torch.profiler (+ module hooks) and the opprof tracer
# (+ operator ranges + NVTX module ranges), then the tracer's parts (bare; with emit_nvtx and global hooks,
# the former pass A) and "none" once more (the machine's drift); one process per combination. Prints one
# table: median step time over 50 steps and overhead vs none. Then the CUDA-graph figure: torch.compile(mode="reduce-overhead")
# under the tracer, how many replayed kernels got a capture-time stack.
#   scripts/overhead_gpt2.sh          (OPPROF_BUILD_DIR=build-gpu, OUT=<dir> keeps logs, PYTHON=python3)
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

MODES="none torch_profiler tracer tracer_bare tracer_emit_nvtx none_again"
declare -A median
status=0
for compile in eager inductor; do
  for mode in $MODES; do
    t0=$SECONDS
    line=$(run_one "$compile" "${mode%_again}")
    median[$compile/$mode]=$(field "$line" median_ms)
    [ -n "${median[$compile/$mode]}" ] || status=1
    echo "overhead_gpt2 ran $compile/$mode in $((SECONDS - t0)) s: ${line:-FAILED}"
  done
done
echo "== GPT-2 small (batch 4 x 128), median step over 50 steps after 10 warm-ups"
printf "%-9s %-17s %11s %10s\n" compile mode median_ms overhead
for compile in eager inductor; do
  base=${median[$compile/none]:-}
  for mode in $MODES; do
    m=${median[$compile/$mode]:-}
    if [ -n "$m" ] && [ -n "$base" ]; then
      pct=$(awk -v m="$m" -v b="$base" 'BEGIN { printf "%+.1f%%", (m - b) / b * 100 }')
    else
      pct="-"
    fi
    printf "%-9s %-17s %11s %10s\n" "$compile" "$mode" "${m:-failed}" "$pct"
  done
done

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
