#!/usr/bin/env bash
# Captures, on a GPU machine, the fixtures of inputs made the way users make them (tests/fixtures/field,
# tests/fixtures/train, tests/fixtures/microkernels). Run from the repository root:
#
#   scripts/capture_field_fixtures.sh timelines DEST   # builds opprof, then every timeline pass
#   scripts/capture_field_fixtures.sh counters DEST    # every ncu pass (after `timelines`, same DEST)
#   scripts/capture_field_fixtures.sh microkernels DEST  # only the microkernels, both passes
#   scripts/capture_field_fixtures.sh tracer_train DEST  # builds opprof, then the train/ steps under the tracer
#   scripts/capture_field_fixtures.sh scheduled DEST     # field/<model>_reduce-overhead_scheduled timelines
#
# field/<model>_reduce-overhead_scheduled: the timeline pass alone, with torch.profiler's schedule and prof.step()
#   (user_capture.py --schedule): the replayed step inside a ProfilerStep#N annotation, as training loops record it.
# field/<model>_<mode>: scripts/user_capture.py, timeline (torch.profiler) and ncu in two separate processes,
#   each with its own fresh Inductor/Triton cache (nothing of opprof in either process).
# train/<name>: examples/train_lm.py, one AdamW step, by plain torch.profiler(with_modules=True, with_stack=True)
#   (torch_profiler.json) and by `opprof profile --backend torch --skip-ncu -- python examples/train_lm.py`;
#   tracer_train adds train/<name>/tracer/ from `opprof profile --backend tracer --skip-ncu -- python ...`.
# microkernels: `python -m opprof.capture` pass A, and pass B under ncu --set full plus opprof's default metrics.
# Environment: PYTHON (python3), NCU (ncu on PATH, else /usr/local/cuda/bin/ncu), EXTRA_METRICS (a file of
# metric names, one a line, that the microkernels' ncu pass collects besides data/metrics_default.tsv's).
set -uo pipefail
STAGE=${1:?stage: timelines or counters}
DEST=${2:?destination directory}
PYTHON=${PYTHON:-python3}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Ten processes compile at once in `timelines`: fewer compile workers each.
export TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-4}
say() { printf '[capture_field %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
QUICK_METRICS=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
FIELD=(gpt2:default gpt2:reduce-overhead resnet50:default resnet50:reduce-overhead vit:default vit:reduce-overhead)

# Keeps of an Inductor debug directory only the four files per graph that the engine reads, one folder per graph.
trim_inductor() {
  local src=$1 dst=$2
  [[ -d "$src" ]] || return 0
  mkdir -p "$dst"
  find "$src" -name output_code.py | while read -r f; do
    local d g
    d=$(dirname "$f")
    g=$(basename "$d")
    mkdir -p "$dst/$g"
    for n in output_code.py inductor_provenance_tracking_node_mappings.json fx_graph_readable.py fx_graph_transformed.py; do
      [[ -f "$d/$n" ]] && cp "$d/$n" "$dst/$g/"
    done
  done
}

ncu_pass() {  # ncu_pass OUTDIR METRICS [--set full] -- command...
  local out=$1 metrics=$2
  shift 2
  mkdir -p "$out"
  local extra=()
  while [[ $1 != -- ]]; do extra+=("$1"); shift; done
  shift
  local t0=$SECONDS
  "$NCU" --profile-from-start off --target-processes all --clock-control none --replay-mode kernel \
    --metrics "$metrics" "${extra[@]}" -o "$out/ncu" --force-overwrite --log-file "$out/ncu.log" "$@" \
    >"$out/ncu_run.stdout" 2>"$out/ncu_run.stderr"
  local rc=$?
  "$NCU" --import "$out/ncu.ncu-rep" --csv --page raw --print-units base >"$out/ncu.csv" 2>>"$out/ncu.log"
  rm -f "$out/ncu.ncu-rep"
  say "  ncu $(basename "$out"): rc $rc, $(grep -c '^"[0-9]' "$out/ncu.csv") rows, $((SECONDS - t0)) s"
  gzip -9 -n -f "$out/ncu.csv"
}

build_opprof() {
  say "build"
  cmake -S "$REPO" -B "$REPO/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$REPO/.deps/usr" \
    -DOPPROF_BUILD_TESTS=OFF -DOPPROF_PARQUET=OFF -DOPPROF_BUILD_BENCH=OFF -DOPPROF_TORCH_PYTHON="$(command -v "$PYTHON")" >"$DEST/build.log" 2>&1 &&
    cmake --build "$REPO/build-gpu" -j 16 >>"$DEST/build.log" 2>&1 || { say "build failed"; tail -30 "$DEST/build.log"; exit 1; }
}

TRAIN_SPECS=("gpt2_eager:--model gpt2" "gpt2_compiled:--model gpt2 --compile" "bert_amp:--model bert --amp bf16 --fused-adamw")

micro_timeline() {
  local m="$DEST/microkernels"
  mkdir -p "$m"
  PYTHONPATH="$REPO/python" "$PYTHON" -m opprof.capture --pass timeline --out "$m/cap" \
    --workload "$REPO/examples/microkernels.py" --compile eager --warmup 2 --iters 1 >"$m/timeline.log" 2>&1
}

micro_counters() {
  local m="$DEST/microkernels" metrics
  metrics=$( (cut -f1 "$REPO/data/metrics_default.tsv"; [[ -n "${EXTRA_METRICS:-}" ]] && cat "$EXTRA_METRICS") |
    grep -v '^#' | grep . | sort -u | paste -sd,)
  ncu_pass "$m" "$metrics" --set full -- env PYTHONPATH="$REPO/python" "$PYTHON" -m opprof.capture --pass counters \
    --out "$m/cap" --workload "$REPO/examples/microkernels.py" --compile eager --warmup 2 --iters 1
}

case "$STAGE" in
scheduled)
  for model in gpt2 vit; do
    d="$DEST/field/${model}_reduce-overhead_scheduled"
    mkdir -p "$d"
    "$PYTHON" "$REPO/scripts/user_capture.py" --model "$model" --mode reduce-overhead --pass timeline --schedule \
      --out "$d" >"$d/timeline.log" 2>&1 || say "$model: the timeline pass failed"
    trim_inductor "$d/debug" "$d/inductor"
    rm -rf "$d/debug" "$d/cache_timeline"
    [[ -f "$d/trace.json" ]] && gzip -9 -n -f "$d/trace.json"
    say "field $(basename "$d"): $(ls "$d" | tr '\n' ' ')"
  done
  ;;
timelines)
  build_opprof
  pids=()
  for spec in "${FIELD[@]}"; do
    model=${spec%%:*} mode=${spec#*:}
    d="$DEST/field/${model}_${mode}"
    mkdir -p "$d"
    "$PYTHON" "$REPO/scripts/user_capture.py" --model "$model" --mode "$mode" --pass timeline --out "$d" >"$d/timeline.log" 2>&1 &
    pids+=($!)
  done
  for spec in "${TRAIN_SPECS[@]}"; do
    name=${spec%%:*} args=${spec#*:}
    d="$DEST/train/$name"
    mkdir -p "$d"
    # shellcheck disable=SC2086
    (TORCH_COMPILE_DEBUG=1 TORCH_COMPILE_DEBUG_DIR="$d/debug" TORCHINDUCTOR_CACHE_DIR="$d/cache/i" TRITON_CACHE_DIR="$d/cache/t" \
      "$PYTHON" "$REPO/examples/train_lm.py" $args --torch-profiler "$d/torch_profiler.json" >"$d/torch_profiler.log" 2>&1
     "$REPO/build-gpu/opprof" profile --backend torch --skip-ncu --clock-control none -o "$d/opprof" -- \
      "$PYTHON" "$REPO/examples/train_lm.py" $args >"$d/opprof.log" 2>&1) &
    pids+=($!)
  done
  micro_timeline &
  pids+=($!)
  for p in "${pids[@]}"; do wait "$p" || say "a timeline job failed (pid $p)"; done
  for spec in "${FIELD[@]}"; do
    d="$DEST/field/${spec%%:*}_${spec#*:}"
    trim_inductor "$d/debug" "$d/inductor"
    rm -rf "$d/debug" "$d/cache_timeline"
    [[ -f "$d/trace.json" ]] && gzip -9 -n -f "$d/trace.json"
    say "field $(basename "$d"): $(ls "$d" | tr '\n' ' ')"
  done
  for spec in "${TRAIN_SPECS[@]}"; do
    d="$DEST/train/${spec%%:*}"
    trim_inductor "$d/debug" "$d/inductor"
    rm -rf "$d/debug" "$d/cache"
    [[ -f "$d/torch_profiler.json" ]] && gzip -9 -n -f "$d/torch_profiler.json"
    if [[ -d "$d/opprof" ]]; then  # opprof profile's output: the artifacts the engine reads, trimmed
      rm -rf "$d/opprof/cache" "$d/opprof/inductor_counters"
      [[ -d "$d/opprof/inductor" ]] && mv "$d/opprof/inductor" "$d/opprof/inductor_raw" &&
        trim_inductor "$d/opprof/inductor_raw" "$d/opprof/inductor" && rm -rf "$d/opprof/inductor_raw"
      [[ -f "$d/opprof/trace.json" ]] && gzip -9 -n -f "$d/opprof/trace.json"
    fi
    say "train $(basename "$d"): $(ls "$d" | tr '\n' ' '); $(grep -E 'attributed|error' "$d/opprof.log" | tail -2)"
  done
  ;;
counters)
  for spec in "${FIELD[@]}"; do
    model=${spec%%:*} mode=${spec#*:}
    d="$DEST/field/${model}_${mode}"
    ncu_pass "$d" "$QUICK_METRICS" -- "$PYTHON" "$REPO/scripts/user_capture.py" --model "$model" --mode "$mode" --pass ncu --out "$d"
    rm -rf "$d/cache_ncu"
  done
  micro_counters
  ;;
microkernels)
  micro_timeline
  micro_counters
  ;;
tracer_train)
  build_opprof
  pids=()
  for spec in "${TRAIN_SPECS[@]}"; do
    name=${spec%%:*} args=${spec#*:}
    d="$DEST/train/$name"
    mkdir -p "$d"
    # shellcheck disable=SC2086
    "$REPO/build-gpu/opprof" profile --backend tracer --skip-ncu --clock-control none -o "$d/tracer" -- \
      "$PYTHON" "$REPO/examples/train_lm.py" $args >"$d/tracer.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || say "a tracer job failed (pid $p)"; done
  for spec in "${TRAIN_SPECS[@]}"; do
    d="$DEST/train/${spec%%:*}/tracer"
    rm -rf "$d/cache" "$d/inductor_counters"
    [[ -d "$d/inductor" ]] && mv "$d/inductor" "$d/inductor_raw" && trim_inductor "$d/inductor_raw" "$d/inductor" &&
      rm -rf "$d/inductor_raw"
    say "tracer $(basename "$(dirname "$d")"): $(ls "$d" | tr '\n' ' ')"
  done
  ;;
*) echo "stage must be timelines, counters, microkernels, tracer_train or scheduled" >&2; exit 2 ;;
esac
say "done: $(du -sh "$DEST" | cut -f1)"
