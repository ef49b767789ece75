#!/usr/bin/env bash
# Can pass B's start-up overlap pass A through ncu's launch/attach mode? Run from the repository root on the GPU
# machine:
#
#   bash scripts/gpu/probe_attach.sh
#
# 1. A small program under `ncu --mode launch`, attached after 8 s, once per way of choosing the port: where
#    it waits, whether the attach finds it and profiles.
# 2. Pass B of eager GPT-2 with --dedup layers (opprof's default metric set from data/metrics_default.tsv, its
#    per-launch-config selection), run plainly.
# 3. The same pass split: the runner under `ncu --mode launch` at once, `ncu --mode attach` with the profiling
#    options after WAIT_S (pass A's time in a real run). The attach to the end is what pass B costs after
#    pass A. PYTORCH_NVML_BASED_CUDA_CHECK=1 keeps torch.cuda.is_available() off the CUDA driver, so that the
#    runner waits at the model's first CUDA call rather than at that check.
# Writes $OUT/attach_summary.txt and $OUT/attach_logs.tgz.
set -uo pipefail
REPO=$(pwd)
OUT=${OUT:-/tmp/attach_out}
mkdir -p "$OUT"
W=/tmp/attach_work
rm -rf "$W" && mkdir -p "$W"
PYTHON=${PYTHON:-python3}
WAIT_S=${WAIT_S:-30}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
SUMMARY="$W/attach_summary.txt"
say() { printf '[attach %s +%ds] %s\n' "$(date -u +%H:%M:%S.%N | cut -c1-12)" "$SECONDS" "$*" | tee -a "$SUMMARY" >&2; }
finish() {
  cp "$SUMMARY" "$OUT/attach_summary.txt" 2>/dev/null
  tar -czf "$OUT/attach_logs.tgz" -C "$W" --exclude='*.ncu-rep' --exclude='*/cache' --exclude='*/inductor' . 2>/dev/null
}
trap finish EXIT
now() { date +%s.%N; }
elapsed() { "$PYTHON" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }
free_port() { "$PYTHON" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
oneline() { tr '\n' '|' <"$1" | tail -c "${2:-500}"; }

NCU=$(command -v ncu)
say "ncu: $NCU ($("$NCU" --version | tail -1))"

# 1. The small program, per port choice: LAUNCH_OPTS|ATTACH_OPTS ("P" is a free port).
cat >"$W/tiny.py" <<'EOF'
import time, sys
def log(m): print(f"[tiny {time.time():.2f}] {m}", file=sys.stderr, flush=True)
log("start")
import torch
log(f"torch imported; is_available {torch.cuda.is_available()}")
x = torch.ones(1 << 20, device="cuda")
log("tensor on the GPU")
for _ in range(3):
    x = x * 2
torch.cuda.synchronize()
log(f"done {x[0].item()}")
EOF
variant=0
for v in "--port P|--port P" "--port P --max-connections 1|--port P" "--port P --max-connections 1|--port P --max-connections 1" \
         "--port P --max-connections 2|--port P --max-connections 2" "--target-processes all|"; do
  variant=$((variant + 1))
  port=$(free_port)
  launch_opts=${v%%|*}; attach_opts=${v#*|}
  launch_opts=${launch_opts//P/$port}; attach_opts=${attach_opts//P/$port}
  t0=$(now)
  # shellcheck disable=SC2086
  PYTORCH_NVML_BASED_CUDA_CHECK=1 "$NCU" --mode launch $launch_opts "$PYTHON" "$W/tiny.py" \
    >"$W/tiny$variant.launch.out" 2>"$W/tiny$variant.launch.err" &
  pid=$!
  sleep 7
  t1=$(now)
  # shellcheck disable=SC2086
  timeout 40 "$NCU" --mode attach --hostname 127.0.0.1 $attach_opts --metrics gpu__time_duration.sum \
    --export "$W/tiny$variant" --force-overwrite >"$W/tiny$variant.attach.out" 2>&1
  rc=$?
  timeout 20 tail --pid=$pid -f /dev/null || kill -9 $pid 2>/dev/null
  say "tiny $variant [launch $launch_opts | attach $attach_opts]: attach rc $rc in $(elapsed "$t1" "$(now)") s," \
      "$(grep -c '==PROF== Profiling' "$W/tiny$variant.attach.out") kernels; attach: $(oneline "$W/tiny$variant.attach.out" 300);" \
      "launch: $(oneline "$W/tiny$variant.launch.out" 200); program: $(oneline "$W/tiny$variant.launch.err" 300)"
done

# 2. and 3.: pass B's command as opprof builds it for eager GPT-2 with --dedup layers.
METRICS=$(awk -F'\t' '!/^#/ && NF > 3 && ($4 == "*" || $4 ~ /gh100/) {print $1}' "$REPO/data/metrics_default.tsv" | paste -sd,)
PROFILE_ARGS=(--export "$W/b/ncu" --force-overwrite --clock-control none --profile-from-start off --metrics "$METRICS"
  --filter-mode per-launch-config --launch-count 1 --kernel-name-base mangled)
RUNNER_ARGS=("$PYTHON" -m opprof.capture --pass counters --out "$W/b" --warmup 1 --iters 1 --workload
  "$REPO/examples/gpt2.py" --compile eager)
mkdir -p "$W/b"
export PYTHONPATH="$REPO/python"
t0=$(now)
timeout 150 "$NCU" --target-processes all "${PROFILE_ARGS[@]}" "${RUNNER_ARGS[@]}" >"$W/plain.out" 2>"$W/plain.err"
say "plain pass B: rc $? in $(elapsed "$t0" "$(now)") s, $(grep -c '==PROF== Profiling' "$W/plain.out") kernels profiled"

for nvml in 1 0; do
  port=$(free_port)
  LAUNCH_PORT=(--port "$port"); ATTACH_PORT=(--port "$port")
  t0=$(now)
  PYTORCH_NVML_BASED_CUDA_CHECK=$nvml "$NCU" --mode launch "${LAUNCH_PORT[@]}" --target-processes all "${RUNNER_ARGS[@]}" \
    >"$W/launch$nvml.out" 2>"$W/launch$nvml.err" &
  pid=$!
  sleep "$WAIT_S"
  say "launch (NVML check $nvml): after $WAIT_S s the runner wrote: $(tail -3 "$W/launch$nvml.err" | tr '\n' '|' | tail -c 500)"
  t1=$(now)
  timeout 150 "$NCU" --mode attach --hostname 127.0.0.1 "${ATTACH_PORT[@]}" "${PROFILE_ARGS[@]}" >"$W/attach$nvml.out" 2>&1
  rc=$?
  t2=$(now)
  timeout 30 tail --pid=$pid -f /dev/null || kill -9 $pid 2>/dev/null
  say "attach (NVML check $nvml): rc $rc, $(elapsed "$t1" "$t2") s from the attach to its end, runner ended $(elapsed "$t1" "$(now)") s" \
      "after the attach; kernels profiled: $(grep -c '==PROF== Profiling' "$W/attach$nvml.out") in attach's output," \
      "$(grep -c '==PROF== Profiling' "$W/launch$nvml.out") in launch's; $(tail -2 "$W/attach$nvml.out" | tr '\n' '|' | tail -c 300)"
  say "runner (NVML check $nvml): $(grep 'model\|measured\|wrote' "$W/launch$nvml.err" | tr '\n' '|' | tail -c 500)"
done
say "done"
