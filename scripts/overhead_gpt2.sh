#!/usr/bin/env bash
# Step-time overhead of opprof's capture backends on GPT-2 small (scripts/overhead_gpt2.py), on a GPU, eager
# and torch.compile: one process with the tracer injected (none / tracer_bare / tracer in interleaved blocks)
# and one without (none / torch_profiler in interleaved blocks), then the CUDA-graph figure:
# torch.compile(mode="reduce-overhead") under the tracer, how many replayed kernels got a capture-time stack.
#   scripts/overhead_gpt2.sh   (OPPROF_BUILD_DIR=build-gpu, OUT=<dir> keeps logs, PYTHON=python3,
#                               ROUNDS=10, BLOCK=5, REDUCE_OVERHEAD=0 skips the CUDA-graph check,
#                               BREAKDOWN=1 adds the eager tracer_floor / tracer_ops / tracer_modules /
#                               tracer_module_wrappers conditions, BATCH=4 SEQ=128 the GPT-2 input shape,
#                               COMPILES="eager inductor" the modes measured)
# The compiled runs share one Inductor/Triton cache, so only the first one compiles.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${OPPROF_BUILD_DIR:-build-gpu}
[[ "$BUILD" = /* ]] || BUILD=$REPO/$BUILD
PY=${PYTHON:-python3}
DEST=${OUT:-$(mktemp -d)}/overhead_gpt2
mkdir -p "$DEST"
TRACER=$BUILD/agents/tracer/libopprof_tracer.so
DUMP=$BUILD/agents/tracer/opprof_trace_dump
for f in "$TRACER" "$DUMP"; do [[ -e "$f" ]] || { echo "overhead_gpt2: missing $f (build first)"; exit 2; }; done
export TORCHINDUCTOR_CACHE_DIR=$DEST/cache/inductor TRITON_CACHE_DIR=$DEST/cache/triton
export TORCHINDUCTOR_FX_GRAPH_CACHE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
BATCH=${BATCH:-4} SEQ=${SEQ:-128}
ARGS=(--rounds "${ROUNDS:-10}" --block "${BLOCK:-5}" --batch "$BATCH" --seq "$SEQ")

status=0
run() {  # run COMPILE BACKEND: the script's "overhead ..." lines; log (and trace) in $DEST
  local compile=$1 backend=$2 log=$DEST/$1_$2.log t0=$SECONDS rc
  if [ "$backend" = tracer ]; then
    CUDA_INJECTION64_PATH=$TRACER NVTX_INJECTION64_PATH=$TRACER OPPROF_TRACE_FILE=$DEST/${compile}_tracer.opprof \
      OPPROF_TRACE_WINDOW=1 "$PY" "$REPO/scripts/overhead_gpt2.py" --compile "$compile" --backend tracer "${ARGS[@]}" \
      $([ "${BREAKDOWN:-0}" = 1 ] && [ "$compile" = eager ] && echo --breakdown) > "$log" 2>&1
  else
    "$PY" "$REPO/scripts/overhead_gpt2.py" --compile "$compile" --backend torch "${ARGS[@]}" > "$log" 2>&1
  fi
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "overhead_gpt2: $compile/$backend failed (rc=$rc): $(tail -2 "$log" | tr '\n' ' ' | cut -c1-300)" >&2
    status=1
  fi
  echo "overhead_gpt2 ran $compile/$backend in $((SECONDS - t0)) s" >&2
}
field() { echo "$1" | grep -o "$2=[^ ]*" | head -1 | cut -d= -f2; }

echo "== GPT-2 small (batch $BATCH x $SEQ): median step (ms) and overhead vs none in the same process and round"
printf "%-9s %-23s %10s %9s   %s\n" compile mode median_ms overhead "round medians"
for compile in ${COMPILES:-eager inductor}; do
  case $compile in eager|inductor) ;; *) echo "overhead_gpt2: COMPILES takes eager and inductor, not '$compile'" >&2; exit 2;; esac
  run "$compile" tracer
  run "$compile" torch
  for backend in tracer torch; do
    grep '^overhead ' "$DEST/${compile}_$backend.log" | while read -r line; do
      printf "%-9s %-23s %10s %8s%%   %s\n" "$compile" "$(field "$line" mode)" "$(field "$line" median_ms)" \
        "$(field "$line" overhead_pct)" "$(echo "$line" | grep -o 'rounds=\[[^]]*\]')"
    done
  done
  # Nothing lost by switching recording at each window: every window holds whole steps.
  dump=$("$DUMP" "$DEST/${compile}_tracer.opprof" --first 0 2>/dev/null)
  kernels=$(echo "$dump" | grep -o '^records\.kernel=[0-9]*' | cut -d= -f2)
  launches=$(echo "$dump" | grep -o '^records\.api_call=[0-9]*' | cut -d= -f2)
  steps=$(grep -o '^window_steps=[0-9]*' "$DEST/${compile}_tracer.log" | cut -d= -f2)
  grep '^module ranges:' "$DEST/${compile}_tracer.log"
  echo "$compile: ${kernels:-0} kernels and ${launches:-0} API calls recorded in the windows of ${steps:-?} steps"
done

[ "${REDUCE_OVERHEAD:-1}" = 1 ] || { echo "overhead_gpt2 logs in $DEST"; exit $status; }
echo "== CUDA graphs: torch.compile(mode=\"reduce-overhead\") under the tracer, 1 step in the window"
log=$DEST/reduce_overhead.log
CUDA_INJECTION64_PATH=$TRACER NVTX_INJECTION64_PATH=$TRACER OPPROF_TRACE_FILE=$DEST/reduce_overhead.opprof \
  OPPROF_TRACE_WINDOW=1 "$PY" "$REPO/scripts/overhead_gpt2.py" --compile inductor --backend tracer --reduce-overhead-check \
  --batch "$BATCH" --seq "$SEQ" \
  > "$log" 2>&1 || { echo "reduce-overhead run failed: $(tail -2 "$log" | tr '\n' ' ' | cut -c1-300)"; status=1; }
"$DUMP" "$DEST/reduce_overhead.opprof" --first 0 > "$DEST/reduce_overhead.dump" 2>&1
grep -E "^(summary|records\.(kernel|capture_launch|graph_node|graph_node_clone)=|meta graph\.)" "$DEST/reduce_overhead.dump"
total=$(grep -o 'meta graph.activities=[0-9]*' "$DEST/reduce_overhead.dump" | cut -d= -f2)
with=$(grep -o 'meta graph.activities_with_capture_stack=[0-9]*' "$DEST/reduce_overhead.dump" | cut -d= -f2)
echo "cuda_graph_attribution replayed_kernels=${total:-?} with_capture_stack=${with:-?}"
echo "overhead_gpt2 logs in $DEST"
exit $status
