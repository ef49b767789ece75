#!/usr/bin/env bash
# End-to-end check of the opprof tracer on a GPU machine. Run from the repository root after building:
#   cmake -S . -B build-gpu -G Ninja -DCMAKE_PREFIX_PATH=$PWD/.deps/usr -DOPPROF_BUILD_TESTS=OFF -DOPPROF_BUILD_BENCH=OFF
#   cmake --build build-gpu -j16
#   scripts/tracer_selfcheck.sh            (OPPROF_BUILD_DIR=<dir> for another build directory)
# It traces examples/cuda_nvtx (full and window-only), a tiny PyTorch eager step under emit_nvtx, and
# measures the tracer's overhead on 2000 tiny launches. Logs and dumps go under $OUT (or a temp dir).
# Prints compact results; exits non-zero when a check fails.
set -uo pipefail
BUILD=${OPPROF_BUILD_DIR:-build-gpu}
DEST=${OUT:-$(mktemp -d)}/tracer_selfcheck
mkdir -p "$DEST"
TRACER=$(realpath "$BUILD/tracer/libopprof_tracer.so" 2>/dev/null)
DUMP=$BUILD/tracer/opprof_trace_dump
EXAMPLE=$BUILD/examples/cuda_nvtx/cuda_nvtx_example
for f in "$TRACER" "$DUMP" "$EXAMPLE"; do
  [[ -n "$f" && -e "$f" ]] || { echo "missing $f (build first: see the header of $0)"; exit 2; }
done
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

echo "== device"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -2
echo "tracer=$TRACER"

echo "== example, full capture"
traced "$DEST/example.bin" "$EXAMPLE" | tee "$DEST/example.out"
"$DUMP" "$DEST/example.bin" --first 12 > "$DEST/example.dump" 2>&1
grep -E "^(header|records\.|summary|stack|timeline kernels|meta (device|window|graph|warning))" "$DEST/example.dump"
# warm-up 3 + window 6 + graph replays 3x2 + 1 = 16 kernels
expect kernels "$(value 'records.kernel' "$DEST/example.dump")" -ge 16
expect graph_kernels "$(value 'graph_kernels' "$DEST/example.dump")" -eq 6
expect graph_kernels_with_stack "$(value 'graph_kernels_with_stack' "$DEST/example.dump")" -eq 6
grep -q "stack=graph_capture>captured_block" "$DEST/example.dump" && pass "graph stack graph_capture>captured_block" \
  || fail "graph kernels do not lead back to graph_capture>captured_block"
expect nvtx_push "$(value 'records.nvtx_push' "$DEST/example.dump")" -ge 18
expect nvtx_pop "$(value 'records.nvtx_pop' "$DEST/example.dump")" -ge 18
expect window_start "$(value 'records.window_start' "$DEST/example.dump")" -eq 1
expect window_stop "$(value 'records.window_stop' "$DEST/example.dump")" -eq 1
expect memcpy "$(value 'records.memcpy' "$DEST/example.dump")" -ge 3
expect memset "$(value 'records.memset' "$DEST/example.dump")" -ge 2
expect api_calls "$(value 'records.api_call' "$DEST/example.dump")" -ge 16
expect stream_ranges "$(value 'stream_ranges' "$DEST/example.dump")" -ge 12
grep -q 'domain="opprof_example"' "$DEST/example.dump" && pass "domain range recorded" || fail "no range in domain opprof_example"
grep -q 'text="async_region"' "$DEST/example.dump" && pass "start/end range recorded" || fail "no start/end range async_region"
grep -q "timeline error" "$DEST/example.dump" && fail "read_tracer_log: $(grep 'timeline error' "$DEST/example.dump")"

echo "== example, window only (OPPROF_TRACE_WINDOW=1)"
OPPROF_TRACE_WINDOW=1 traced "$DEST/example_window.bin" "$EXAMPLE" > /dev/null
"$DUMP" "$DEST/example_window.bin" --first 0 > "$DEST/example_window.dump" 2>&1
grep -E "^(records\.(kernel|nvtx_push|api_call)|summary)" "$DEST/example_window.dump"
expect window_kernels "$(value 'records.kernel' "$DEST/example_window.dump")" -eq 13
expect window_graph_kernels_with_stack "$(value 'graph_kernels_with_stack' "$DEST/example_window.dump")" -eq 6

echo "== PyTorch eager step under emit_nvtx"
PY=${PYTHON:-python3}
if "$PY" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  cat > "$DEST/torch_step.py" <<'PYEOF'
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
  traced "$DEST/torch.bin" "$PY" "$DEST/torch_step.py" 2>&1 | tail -3
  "$DUMP" "$DEST/torch.bin" --first 6 > "$DEST/torch.dump" 2>&1
  grep -E "^(records\.|summary|timeline|meta (device|window|warning))" "$DEST/torch.dump"
  expect torch_kernels "$(value 'records.kernel' "$DEST/torch.dump")" -ge 4
  expect torch_operator_ranges "$(value 'operator' "$DEST/torch.dump")" -ge 4
  grep -q 'text="aten::' "$DEST/torch.dump" && pass "aten:: operator ranges" || fail "no aten:: operator range"
  OPPROF_TRACE_WINDOW=1 traced "$DEST/torch_window.bin" "$PY" "$DEST/torch_step.py" > /dev/null 2>&1
  "$DUMP" "$DEST/torch_window.bin" --first 0 > "$DEST/torch_window.dump" 2>&1
  grep -E "^(records\.(kernel|nvtx_push|api_call)|timeline kernels)" "$DEST/torch_window.dump"
else
  echo "SKIP torch with CUDA not importable by $PY"
fi

echo "== overhead: 2000 tiny launches (each in an NVTX range), median of 7"
"$EXAMPLE" --overhead 2000 | sed 's/^/untraced /'
traced "$DEST/overhead.bin" "$EXAMPLE" --overhead 2000 | sed 's/^/traced   /'
ls -l "$DEST/overhead.bin" | awk '{print "overhead log bytes=" $5}'

echo "== outputs in $DEST"
if [ "$failures" -eq 0 ]; then echo "SELFCHECK OK"; else echo "SELFCHECK FAILED ($failures)"; fi
[ "$failures" -eq 0 ]
