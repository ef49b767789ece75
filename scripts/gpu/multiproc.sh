#!/usr/bin/env bash
# Issue 19 on one H200: a 2-process data-parallel training step of GPT-2 small (examples/train_ddp.py, DDP,
# two ranks on the one GPU) profiled end to end by `opprof profile -- torchrun ...` (tracer pass A in every
# rank, ncu over all processes in pass B, one profile for the job). Run from the repository root:
#
#   OUT=/some/dir scripts/gpu/multiproc.sh
#
# Steps: build opprof (tests off) into build-gpu/; ask NCCL whether it takes two ranks on one device
# (NCCL_NVLS_ENABLE=0; it is expected to refuse: "Duplicate GPU detected"), else use gloo; profile with a
# quick metric set (6 metrics of data/metrics_default.tsv), --clock-control none, clocks not locked.
# Under NCCL pass B runs without ncu (--skip-ncu): ncu's kernel replay serializes the ranks, and a replayed
# all-reduce waits for a peer that cannot run. Everything goes to $OUT/multiproc.tgz (the job's capture
# folder trimmed to what the engine reads, profile.db, reports, logs) and $OUT/summary.txt (the figures).
set -uo pipefail
OUT=${OUT:-$PWD/multiproc-out}
PYTHON=${PYTHON:-python3}
REPO=$PWD
W=$(mktemp -d /tmp/multiproc.XXXXXX)
mkdir -p "$OUT" "$W/logs"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 NCCL_NVLS_ENABLE=0
say() { printf '[multiproc %s] %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$W/logs/steps.txt" >&2; }
finish() {
  tar -czf "$OUT/multiproc.tgz" -C "$W" . 2>/dev/null
  cp "$W/summary.txt" "$OUT/summary.txt" 2>/dev/null || cp "$W/logs/steps.txt" "$OUT/summary.txt"
}
trap finish EXIT

say "build"
t0=$SECONDS
cmake -S "$REPO" -B "$REPO/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$REPO/.deps/usr" \
  -DOPPROF_BUILD_TESTS=OFF -DOPPROF_BUILD_BENCH=OFF -DOPPROF_TORCH_PYTHON="$(command -v "$PYTHON")" >"$W/logs/build.log" 2>&1 &&
  cmake --build "$REPO/build-gpu" -j 16 >>"$W/logs/build.log" 2>&1 || { say "build failed"; tail -30 "$W/logs/build.log" >&2; exit 1; }
say "built in $((SECONDS - t0)) s; $(ls "$REPO"/build-gpu/agents/*/lib*.so 2>/dev/null | xargs -n1 basename | tr '\n' ' ')"
OPPROF=$REPO/build-gpu/opprof
TORCHRUN=("$PYTHON" -m torch.distributed.run --nproc-per-node 2 --standalone)

say "does NCCL take two ranks on one GPU?"
BACKEND=gloo
if timeout 90 "${TORCHRUN[@]}" examples/train_ddp.py --check --backend nccl >"$W/logs/nccl_check.log" 2>&1; then
  BACKEND=nccl
fi
say "backend: $BACKEND (nccl check: $(grep -m1 -oE 'Duplicate GPU[^.]*|all_reduce ok|Error[^.]*' "$W/logs/nccl_check.log" || echo 'see logs/nccl_check.log'))"

{ grep '^#' "$REPO/data/metrics_default.tsv" | head -3; grep -v '^#' "$REPO/data/metrics_default.tsv" | head -6; } >"$W/quick_metrics.tsv"
NCU_ARGS=(--metrics "$W/quick_metrics.tsv")
[[ $BACKEND == nccl ]] && NCU_ARGS=(--skip-ncu)
say "profile: opprof profile ${NCU_ARGS[*]} -- torchrun --nproc-per-node 2 examples/train_ddp.py --model gpt2 --backend $BACKEND"
t0=$SECONDS
timeout 400 "$OPPROF" profile --clock-control none "${NCU_ARGS[@]}" -o "$W/job" -- \
  "${TORCHRUN[@]}" examples/train_ddp.py --model gpt2 --backend "$BACKEND" --batch 2 --seq 128 --steps 2 \
  >"$W/logs/profile.stdout" 2>"$W/logs/profile.stderr"
say "opprof profile: rc $?, $((SECONDS - t0)) s"
tail -40 "$W/logs/profile.stderr" >&2

if [[ -f "$W/job/profile.db" ]]; then
  "$OPPROF" report --json "$W/job/profile.db" >"$W/job/report.json" 2>>"$W/logs/report.log"
  # The same job attributed again from the kept capture folders: what the golden test does on the fixture.
  "$OPPROF" attribute --job "$W/job" $([[ -f "$W/job/ncu.csv" ]] && echo --ncu "$W/job/ncu.csv") \
    -o "$W/job/reattributed.db" -q >>"$W/logs/report.log" 2>&1
  say "reattributed from the folders: rc $?"
fi
rm -rf "$W/job"/rank*/cache "$W/job"/rank*/inductor_counters "$W/job/ncu.ncu-rep"
[[ -f "$W/job/ncu.csv" ]] && gzip -9 -n -f "$W/job/ncu.csv"

"$PYTHON" - "$W" "$BACKEND" >"$W/summary.txt" 2>>"$W/logs/steps.txt" <<'PY'
import json, sys, os
w, backend = sys.argv[1], sys.argv[2]
print(f"backend: {backend}")
print(open(os.path.join(w, "logs", "steps.txt")).read())
path = os.path.join(w, "job", "report.json")
if not os.path.exists(path):
    print("no report.json"); sys.exit(0)
r = json.load(open(path))
print(f"kernel time {r['kernel_time_ns']} ns, {r['kernels']} kernels, attributed {r['attributed_pct']:.1f} %, "
      f"module {r['module_attributed_pct']:.1f} %")
print("by phase %:", {k: round(v, 1) for k, v in r["by_phase"].items()})
print("ncu:", {k: r["ncu"][k] for k in ("available", "rows", "matched", "unmatched_rows", "unmatched_kernels")})
job = r.get("job") or {}
for p in job.get("processes", []):
    keys = ("rank", "pid", "status", "problem", "kernels", "kernel_time_ns", "time_vs_mean", "compute_ns",
            "communication_ns", "overlap_ns", "exposed_communication_ns", "cpu_communication_ns", "cpu_overlap_ns")
    print("process:", {k: p.get(k) for k in keys})
for k in ("communication_share", "overlapped_share", "exposed_communication_ns", "max_time_vs_mean", "min_time_vs_mean"):
    print(f"{k}: {job.get(k)}")
print("warnings:", r.get("warnings"))
PY
say "done"
