#!/usr/bin/env bash
# Issue 19 on one H200: a 2-process data-parallel training step of GPT-2 small (examples/train_ddp.py, DDP,
# AdamW, two ranks on the one GPU) profiled end to end by `opprof profile -- torchrun ...`: the tracer in
# every rank (pass A), ncu over all processes (pass B), one profile for the job. Run from the repository root:
#
#   OUT=/some/dir scripts/gpu/multiproc.sh
#
# 1. build opprof (tests off) into build-gpu/ as scripts/capture_field_fixtures.sh does;
# 2. ask NCCL whether it takes two ranks on one device (NCCL_NVLS_ENABLE=0; it is expected to refuse:
#    "Duplicate GPU detected"), else use gloo;
# 3. job "gpt2": GPT-2 small (12 layers), timeline only (--skip-ncu): per-rank figures, communication, overlap;
# 4. job "gpt2_l2": the same with 2 of the 12 blocks, with ncu (the first 2 metrics of data/metrics_default.tsv:
#    the first run's 6 needed 11 replay passes per kernel and ran out of time at 306 of 414 kernels), to
#    check ncu over both ranks' processes and the per-process match within the time budget (a 12-layer
#    training step is ~1000 kernels per rank; replaying 2000 kernels takes longer than this run may).
#    Under NCCL this job also runs with --skip-ncu: ncu's kernel replay serializes the ranks, and a
#    replayed all-reduce waits for a peer that cannot run.
# 5. RUNS="l1_off l1_ranks l1_verify" (issue 19, dedup across ranks): GPT-2 with 1 block and the same 2
#    metrics, pass B without dedup (both ranks replay every kernel), with the default dedup (only rank 0
#    opens ncu's window; rank 1 takes its counters kernel by kernel) and with --dedup-verify 1 (rank 1
#    replayed too and compared). RUNS picks and orders the jobs (default "gpt2 gpt2_l2").
# 6. RUNS=comm_l1: GPT-2 with 1 block, timeline only, with the tracer's defaults: the collectives' bytes,
#    dtype and process group (the torch observer's communication marks, the capture's process-group mark).
# BACKEND=gloo|nccl skips the probe of step 2. --clock-control none, clocks not locked. $OUT/summary.txt has the figures; $OUT/multiproc.tgz the capture
# folders trimmed to what the engine reads, the profiles, reports and logs.
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
  -DOPPROF_BUILD_TESTS=OFF -DOPPROF_PARQUET=OFF -DOPPROF_BUILD_BENCH=OFF -DOPPROF_TORCH_PYTHON="$(command -v "$PYTHON")" >"$W/logs/build.log" 2>&1 &&
  cmake --build "$REPO/build-gpu" -j 16 >>"$W/logs/build.log" 2>&1 || { say "build failed"; tail -30 "$W/logs/build.log" >&2; exit 1; }
say "built in $((SECONDS - t0)) s: $(cd "$REPO/build-gpu" && find agents -name '*.so' | tr '\n' ' ')"
OPPROF=$REPO/build-gpu/opprof
TORCHRUN=("$PYTHON" -m torch.distributed.run --nproc-per-node 2 --standalone)

if [[ -n ${BACKEND:-} ]]; then
  say "backend: $BACKEND (as asked; NCCL not probed)"
else
  say "does NCCL take two ranks on one GPU?"
  BACKEND=gloo
  if timeout 90 "${TORCHRUN[@]}" examples/train_ddp.py --check --backend nccl >"$W/logs/nccl_check.log" 2>&1; then
    BACKEND=nccl
  fi
  say "backend: $BACKEND (nccl: $(grep -m1 -oE 'Duplicate GPU[^.]*|all_reduce ok|ncclInvalidUsage[^.]*|Error[^.]*' "$W/logs/nccl_check.log" || echo 'see logs/nccl_check.log'))"
fi

{ grep '^#' "$REPO/data/metrics_default.tsv" | head -3; grep -v '^#' "$REPO/data/metrics_default.tsv" | head -2; } >"$W/quick_metrics.tsv"

profile_job() {  # profile_job NAME TIMEOUT OPPROF-OPTIONS... -- TRAIN-OPTIONS...
  local name=$1 limit=$2 opts=() t0=$SECONDS
  shift 2
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  say "$name: opprof profile ${opts[*]} -- torchrun --nproc-per-node 2 examples/train_ddp.py $*"
  timeout "$limit" "$OPPROF" profile --clock-control none "${opts[@]}" -o "$W/$name" -- \
    "${TORCHRUN[@]}" examples/train_ddp.py --model gpt2 --backend "$BACKEND" --batch 2 --seq 128 --steps 2 "$@" \
    >"$W/logs/$name.stdout" 2>"$W/logs/$name.stderr"
  say "$name: rc $?, $((SECONDS - t0)) s"
  tail -25 "$W/logs/$name.stderr" >&2
  if [[ -f "$W/$name/profile.db" ]]; then
    # The job attributed again from its capture folders, as the golden test does with the fixture.
    local ncu=()
    [[ -f "$W/$name/ncu.csv" ]] && ncu=(--ncu "$W/$name/ncu.csv")
    "$OPPROF" attribute --job "$W/$name" "${ncu[@]}" -o "$W/$name/reattributed.db" -q >>"$W/logs/$name.reattribute" 2>&1
    say "$name: attribute --job from the folders: rc $?"
  fi
  rm -rf "$W/$name"/rank*/cache "$W/$name"/rank*/inductor*
  [[ -f "$W/$name/ncu.csv" ]] && rm -f "$W/$name/ncu.ncu-rep"  # else what ncu wrote before it stopped is kept
  [[ -f "$W/$name/ncu.csv" ]] && gzip -9 -n -f "$W/$name/ncu.csv"
}

RUNS=${RUNS:-gpt2 gpt2_l2}
NCU_OPTS=(--metrics "$W/quick_metrics.tsv")
[[ $BACKEND == nccl ]] && NCU_OPTS=(--skip-ncu)
for run in $RUNS; do
  case $run in
    gpt2) profile_job gpt2 200 --skip-ncu -- --layers 12 ;;
    gpt2_l2) profile_job gpt2_l2 260 "${NCU_OPTS[@]}" -- --layers 2 ;;
    l1_off) profile_job l1_off 260 "${NCU_OPTS[@]}" --dedup off -- --layers 1 ;;
    l1_ranks) profile_job l1_ranks 200 "${NCU_OPTS[@]}" -- --layers 1 ;;
    l1_verify) profile_job l1_verify 260 "${NCU_OPTS[@]}" --dedup-verify 1 -- --layers 1 ;;
    comm_l1) profile_job comm_l1 200 --skip-ncu -- --layers 1 ;;
    *) say "unknown run $run" ;;
  esac
done

"$PYTHON" - "$W" "$BACKEND" $RUNS >"$W/summary.txt" 2>>"$W/logs/steps.txt" <<'PY'
import json, os, sys
w, backend, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
print(f"backend: {backend}")
print(open(os.path.join(w, "logs", "steps.txt")).read())
for name in runs:
    path = os.path.join(w, name, "report.json")
    print(f"== {name}")
    if not os.path.exists(path):
        print("no report.json")
        continue
    r = json.load(open(path))
    print(f"kernel time {r['kernel_time_ns']} ns, {r['kernels']} kernels, attributed {r['attributed_pct']:.1f} %, "
          f"module {r['module_attributed_pct']:.1f} %")
    print("by phase %:", {k: round(v, 1) for k, v in r["by_phase"].items()})
    print("ncu:", {k: r["ncu"][k] for k in ("available", "rows", "matched", "unmatched_rows", "unmatched_kernels")})
    job = r.get("job") or {}
    keys = ("rank", "pid", "status", "problem", "kernels", "kernel_time_ns", "time_vs_mean", "compute_ns",
            "communication_ns", "overlap_ns", "exposed_communication_ns", "cpu_communication_ns", "cpu_overlap_ns")
    for p in job.get("processes", []):
        print("process:", {k: p.get(k) for k in keys})
    for k in ("communication_share", "overlapped_share", "exposed_communication_ns", "max_time_vs_mean",
              "min_time_vs_mean", "most_unequal_operators"):
        print(f"{k}: {job.get(k)}")
    d = r.get("dedup") or {}
    print("dedup:", {k: d.get(k) for k in ("mode", "selection", "classes", "instances", "kernels", "kernels_replayed",
                                           "kernels_propagated", "instances_replayed_in_full")})
    for f in (d.get("differing_instances") or [])[:5]:
        print("  differs:", f.get("instance"), str(f.get("why"))[:200])
    for v in d.get("verify_deviation") or []:
        print("  verify:", v)
    print("pass B s:", r.get("metadata", {}).get("timing.pass_b_s"), " pass A s:", r.get("metadata", {}).get("timing.pass_a_s"))
    print("warnings:", r.get("warnings"))
    import sqlite3
    db = sqlite3.connect(os.path.join(w, name, "profile.db"))
    try:
        for row in db.execute("SELECT rank, source, collective, count(*), sum(bytes), min(elements), max(elements), dtype, "
                              "process_group, process_group_desc, group_size FROM collectives "
                              "GROUP BY rank, source, collective, dtype, process_group ORDER BY rank, source, collective"):
            print("collectives:", row)
    except sqlite3.Error as e:
        print("collectives:", e)
    print("sizes:", {os.path.relpath(os.path.join(d, f), w): os.path.getsize(os.path.join(d, f))
                     for d, _, fs in os.walk(os.path.join(w, name)) for f in fs if "trace" in f or "ncu" in f})
PY
say "done"
