#!/usr/bin/env bash
# End-to-end check of the opprof tracer on a GPU machine. Run from the repository root after building:
#   cmake -S . -B build-gpu -G Ninja -DCMAKE_PREFIX_PATH=$PWD/.deps/usr -DOPPROF_BUILD_TESTS=OFF -DOPPROF_PARQUET=OFF -DOPPROF_BUILD_BENCH=OFF
#   cmake --build build-gpu -j16
#   scripts/tracer_selfcheck.sh      (OPPROF_BUILD_DIR=<dir> for another build, OUT=<dir> for the outputs,
#                                     GPT2_OVERHEAD=0 skips scripts/overhead_gpt2.sh)
# One run: examples/cuda_nvtx (full and window-only: counts, CUDA-graph kernels leading back to their
# capture ranges, domain and start/end ranges), a PyTorch eager step under emit_nvtx, a small
# torch.compile(mode="reduce-overhead") model whose replayed CUDA-graph kernels must get capture stacks,
# 2000 tiny launches with and without the tracer, and scripts/overhead_gpt2.sh (GPT-2 small step-time
# overhead table). Compact results on stdout; under $OUT: tracer/ (the dumps and the full log, 7 files at
# most) and tracer.tgz (everything). Exits non-zero when a check fails.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${OPPROF_BUILD_DIR:-build-gpu}
[[ "$BUILD" = /* ]] || BUILD=$PWD/$BUILD
OUTDIR=${OUT:-$(mktemp -d)}
WORK=$(mktemp -d)/tracer
mkdir -p "$WORK" "$OUTDIR"
TRACER=$(realpath "$BUILD/agents/tracer/libopprof_tracer.so" 2>/dev/null)
DUMP=$BUILD/agents/tracer/opprof_trace_dump
EXAMPLE=$BUILD/examples/cuda_nvtx/cuda_nvtx_example
PY=${PYTHON:-python3}

failures=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
# value KEY FILE: the number after "KEY=" on the first line that has it
value() { grep -o "$1=[0-9]*" "$2" | head -1 | cut -d= -f2; }
expect() {  # expect NAME ACTUAL OP EXPECTED
  local name=$1 actual=${2:-missing} op=$3 want=$4
  if [[ "$actual" =~ ^[0-9]+$ ]] && [ "$actual" "$op" "$want" ]; then pass "$name=$actual ($op $want)"; else fail "$name=$actual (want $op $want)"; fi
}
traced() {  # traced LOG CMD...: runs CMD with the tracer injected, writing LOG
  local log=$1; shift
  CUDA_INJECTION64_PATH=$TRACER NVTX_INJECTION64_PATH=$TRACER OPPROF_TRACE_FILE=$log "$@"
}
short() { cut -c1-220; }  # long kernel names would eat the little output that comes back

main() {
  for f in "$TRACER" "$DUMP" "$EXAMPLE"; do
    [[ -n "$f" && -e "$f" ]] || { echo "missing $f (build first: see the header of $0)"; return 2; }
  done
  echo "== device"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -2
  echo "tracer=$TRACER"

  echo "== example, full capture"
  traced "$WORK/example.bin" "$EXAMPLE" > "$WORK/example.out" 2>&1
  cat "$WORK/example.out" | short
  "$DUMP" "$WORK/example.bin" --first 0 > "$WORK/example.dump" 2>&1
  grep -E "^(records\.(kernel|graph_node|graph_node_clone|graph_exec|capture_launch)=|summary|graph: |timeline (kernels|graph_stack|domain)|meta (graph|warning))" \
    "$WORK/example.dump" | short
  # warm-up 3 + window 6 + graph replays 3x2 + 1 = 16 kernels
  expect kernels "$(value 'records.kernel' "$WORK/example.dump")" -ge 16
  expect graph_kernels "$(value 'meta graph.activities' "$WORK/example.dump")" -eq 6
  expect graph_kernels_with_stack "$(value 'meta graph.activities_with_capture_stack' "$WORK/example.dump")" -eq 6
  grep -q "graph_stack .*stack=graph_capture>captured_block" "$WORK/example.dump" && pass "graph stack graph_capture>captured_block" \
    || fail "graph kernels do not lead back to graph_capture>captured_block"
  expect nvtx_push "$(value 'records.nvtx_push' "$WORK/example.dump")" -ge 18
  expect nvtx_pop "$(value 'records.nvtx_pop' "$WORK/example.dump")" -ge 18
  expect window_start "$(value 'records.window_start' "$WORK/example.dump")" -eq 1
  expect window_stop "$(value 'records.window_stop' "$WORK/example.dump")" -eq 1
  expect memcpy "$(value 'records.memcpy' "$WORK/example.dump")" -ge 3
  expect memset "$(value 'records.memset' "$WORK/example.dump")" -ge 2
  expect api_calls "$(value 'records.api_call' "$WORK/example.dump")" -ge 16
  expect stream_ranges "$(value 'stream_ranges' "$WORK/example.dump")" -ge 12
  grep -q 'timeline domain="opprof_example"' "$WORK/example.dump" && pass "domain range recorded" || fail "no range in domain opprof_example"
  grep -q 'text="async_region"' "$WORK/example.dump" && pass "start/end range recorded" || fail "no start/end range async_region"
  grep -q "timeline error" "$WORK/example.dump" && fail "read_tracer_log: $(grep 'timeline error' "$WORK/example.dump")"

  echo "== example, window only (OPPROF_TRACE_WINDOW=1)"
  OPPROF_TRACE_WINDOW=1 traced "$WORK/example_window.bin" "$EXAMPLE" > /dev/null
  "$DUMP" "$WORK/example_window.bin" --first 0 > "$WORK/example_window.dump" 2>&1
  grep -E "^(records\.(kernel|nvtx_push|api_call|capture_launch)=|meta graph\.)" "$WORK/example_window.dump"
  expect window_kernels "$(value 'records.kernel' "$WORK/example_window.dump")" -eq 13
  expect window_graph_kernels_with_stack "$(value 'meta graph.activities_with_capture_stack' "$WORK/example_window.dump")" -eq 6

  if ! "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    fail "torch with CUDA not importable by $PY: torch checks and overhead table skipped"
    return 0
  fi
  echo "== PyTorch eager step under emit_nvtx"
  cat > "$WORK/torch_step.py" <<'PYEOF'
import torch
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU()).cuda()
x = torch.randn(64, 256, device="cuda")
for _ in range(3):  # warm-up: cuBLAS handles, allocator
    model(x).sum().backward()
torch.cuda.synchronize()
torch.cuda.profiler.start()
with torch.autograd.profiler.emit_nvtx():
    y = model(x)
    y.sum().backward()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
print("torch", torch.__version__, "step done", tuple(y.shape))
PYEOF
  traced "$WORK/torch.bin" "$PY" "$WORK/torch_step.py" > "$WORK/torch.out" 2>&1
  tail -2 "$WORK/torch.out" | short
  "$DUMP" "$WORK/torch.bin" --first 0 > "$WORK/torch.dump" 2>&1
  grep -E "^(records\.(kernel|nvtx_push|api_call)=|timeline kernels|meta warning)" "$WORK/torch.dump" | short
  expect torch_kernels "$(value 'records.kernel' "$WORK/torch.dump")" -ge 4
  expect torch_operator_ranges "$(value 'operator' "$WORK/torch.dump")" -ge 4
  grep -q 'text="aten::' "$WORK/torch.dump" && pass "aten:: operator ranges" || fail "no aten:: operator range"

  echo "== torch.compile(mode=\"reduce-overhead\"): CUDA-graph replays lead back to capture ranges"
  cat > "$WORK/compiled_graphs.py" <<'PYEOF'
import torch
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256)).cuda()
x = torch.randn(64, 256, device="cuda")
step = torch.compile(model, mode="reduce-overhead")
# emit_nvtx from the first call: CUDA graphs are recorded during these warm-up calls, and replayed kernels
# lead back to the ranges open then. "compiled_step" is a range of our own around every call.
with torch.no_grad(), torch.autograd.profiler.emit_nvtx():
    for _ in range(4):
        torch.cuda.nvtx.range_push("compiled_step")
        step(x)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(2):
        torch.cuda.nvtx.range_push("compiled_step")
        y = step(x)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
print("compiled reduce-overhead done", tuple(y.shape))
PYEOF
  OPPROF_TRACE_WINDOW=1 traced "$WORK/compiled_graphs.bin" "$PY" "$WORK/compiled_graphs.py" > "$WORK/compiled_graphs.out" 2>&1
  tail -2 "$WORK/compiled_graphs.out" | short
  "$DUMP" "$WORK/compiled_graphs.bin" --first 0 > "$WORK/compiled_graphs.dump" 2>&1
  grep -E "^(records\.(kernel|graph_node|graph_node_clone|capture_launch)=|summary|timeline graph_stack|meta (graph|warning))" \
    "$WORK/compiled_graphs.dump" | short
  graph_total=$(value 'meta graph.activities' "$WORK/compiled_graphs.dump")
  expect compiled_graph_kernels "$graph_total" -ge 2
  expect compiled_graph_kernels_with_stack "$(value 'meta graph.activities_with_capture_stack' "$WORK/compiled_graphs.dump")" -eq "${graph_total:-1}"
  grep -q "graph_stack .*stack=compiled_step" "$WORK/compiled_graphs.dump" && pass "compiled graph stack starts at compiled_step" \
    || fail "compiled graph kernels do not lead back to compiled_step"

  echo "== overhead: 2000 tiny launches (each in an NVTX range), median of 7"
  "$EXAMPLE" --overhead 2000 | sed 's/^/untraced /'
  traced "$WORK/overhead.bin" "$EXAMPLE" --overhead 2000 | sed 's/^/traced   /'
  ls -l "$WORK/overhead.bin" | awk '{print "overhead log bytes=" $5}'
  rm -f "$WORK/overhead.bin"  # 3 MB of tiny ranges: not worth bringing back

  if [ "${GPT2_OVERHEAD:-1}" = 1 ]; then
    echo "== GPT-2 small overhead (scripts/overhead_gpt2.sh)"
    OUT=$WORK OPPROF_BUILD_DIR=$BUILD PYTHON=$PY "$REPO/scripts/overhead_gpt2.sh" 2>&1 | grep -v "^overhead_gpt2 ran" | short
    local overhead_status=${PIPESTATUS[0]}
    [ "$overhead_status" -eq 0 ] || fail "overhead_gpt2.sh reported a failure (logs in tracer.tgz: tracer/overhead_gpt2/)"
  fi
  echo "== checks done"
}

started=$SECONDS
main 2>&1 | tee "$WORK/selfcheck.log"
status=${PIPESTATUS[0]}
fails=$(grep -c '^FAIL' "$WORK/selfcheck.log")
# At most 8 files come back from $OUT: the full archive, and the few files one reads first.
rm -rf "$WORK/overhead_gpt2/cache"
tar -czf "$OUTDIR/tracer.tgz" -C "$(dirname "$WORK")" tracer 2>/dev/null
mkdir -p "$OUTDIR/tracer"
for f in selfcheck.log example.dump example_window.dump torch.dump compiled_graphs.dump overhead_gpt2/reduce_overhead.dump; do
  [ -f "$WORK/$f" ] && cp "$WORK/$f" "$OUTDIR/tracer/$(basename "$f")"
done
echo "outputs: $OUTDIR/tracer/ and $OUTDIR/tracer.tgz; ran $((SECONDS - started)) s"
if [ "$status" -eq 0 ] && [ "$fails" -eq 0 ]; then echo "SELFCHECK OK"; exit 0; fi
echo "SELFCHECK FAILED ($fails failed checks, status $status)"
exit 1
