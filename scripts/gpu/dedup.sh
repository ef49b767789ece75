#!/usr/bin/env bash
# Layer dedup on the H200 (issue 14's figures), run from the repository root on the GPU machine:
#
#   bash scripts/gpu/dedup.sh
#
# Builds opprof (as scripts/capture_field_fixtures.sh does), then, back to back on this machine, `opprof profile`
# with and without --dedup on GPT-2 small (examples/gpt2.py, batch 4 x 128, eager and compiled) and a training
# step (examples/train_lm.py --model gpt2, eager, AdamW), opprof's default metric set, --clock-control none:
# kernels replayed and pass-B wall time, per-operator key metrics with vs without dedup
# (scripts/gpu/compare_dedup.py), --dedup-verify 3 deviations (eager), the other selections on eager GPT-2
# (--dedup-selection nvtx_modules, per_launch_config), and the captures of the runs FIXTURES names saved as
# fixtures (timeline, ncu CSV, structure file, plan; tests/fixtures/dedup).
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
    -DOPPROF_BUILD_TESTS=OFF -DOPPROF_PARQUET=OFF -DOPPROF_BUILD_BENCH=OFF -DOPPROF_TORCH_PYTHON="$(command -v "$PYTHON")" >"$W/build.log" 2>&1 &&
    timeout 240 cmake --build "$REPO/build-gpu" -j 16 >>"$W/build.log" 2>&1 || {
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
compare() {  # compare NAME FULL DEDUP: when both profiles exist
  if [[ -f "$W/$2/profile.db" && -f "$W/$3/profile.db" ]]; then
    "$PYTHON" "$REPO/scripts/gpu/compare_dedup.py" "$W/$2/profile.db" "$W/$3/profile.db" --name "$1" >>"$SUMMARY" 2>&1
  fi
}

GPT2="$REPO/examples/gpt2.py"
TRAIN=(-- "$PYTHON" "$REPO/examples/train_lm.py" --model gpt2 --steps 1)
# Models dedup was not developed on: BERT-base training, compiled GPT-2 training (programs) and timm's
# ViT-small compiled (a workload module written here, batch 8, inference).
BERT_TRAIN=(-- "$PYTHON" "$REPO/examples/train_lm.py" --model bert --steps 1)
GPT2_TRAIN_COMPILED=(-- "$PYTHON" "$REPO/examples/train_lm.py" --model gpt2 --compile --steps 2)
VIT="$W/vit_small.py"
cat >"$VIT" <<'PY'
import torch


def get_model_and_input(device=None):
    import timm

    torch.manual_seed(0)
    model = timm.create_model("vit_small_patch16_224", pretrained=False).to(device or "cuda").eval()
    return model, {"x": torch.randn(8, 3, 224, 224, device=device or "cuda")}
PY
# RUNS picks the runs and their order (one GPU call may not hold them all): each NAME below; a pair's
# comparison is written once both of its profiles exist.
RUNS=${RUNS:-"eager_layers eager_off eager_verify compiled_layers compiled_off train_layers train_off"}
for name in $RUNS; do
  case $name in
    eager_layers) run eager_layers 50 "$GPT2" --compile eager --warmup 1 --dedup layers ;;
    eager_off) run eager_off 115 "$GPT2" --compile eager --warmup 1 --dedup off ;;
    eager_verify) run eager_verify 55 "$GPT2" --compile eager --warmup 1 --dedup layers --dedup-verify 3 ;;
    eager_plc) run eager_plc 50 "$GPT2" --compile eager --warmup 1 --dedup layers --dedup-selection per_launch_config ;;
    eager_nvtx) run eager_nvtx 50 "$GPT2" --compile eager --warmup 1 --dedup layers --dedup-selection nvtx_modules ;;
    compiled_layers) run compiled_layers 80 "$GPT2" --compile inductor --warmup 1 --dedup layers ;;
    compiled_off) run compiled_off 150 "$GPT2" --compile inductor --warmup 1 --dedup off ;;
    compiled_layers_i2) run compiled_layers_i2 80 "$GPT2" --compile inductor --warmup 1 --iters 2 --dedup layers ;;
    compiled_off_i2) run compiled_off_i2 200 "$GPT2" --compile inductor --warmup 1 --iters 2 --dedup off ;;
    vit_compiled_layers) run vit_compiled_layers 80 "$VIT" --compile inductor --warmup 1 --dedup layers ;;
    vit_compiled_off) run vit_compiled_off 120 "$VIT" --compile inductor --warmup 1 --dedup off ;;
    bert_train_layers) run bert_train_layers 120 --dedup layers "${BERT_TRAIN[@]}" ;;
    bert_train_off) run bert_train_off 450 --dedup off "${BERT_TRAIN[@]}" ;;
    gpt2_train_compiled_layers) run gpt2_train_compiled_layers 150 --dedup layers "${GPT2_TRAIN_COMPILED[@]}" ;;
    train_layers) run train_layers 75 --dedup layers "${TRAIN[@]}" ;;
    train_off) run train_off 300 --dedup off "${TRAIN[@]}" ;;
    *) say "unknown run $name" ;;
  esac
done
compare "GPT-2 small eager, inference" eager_off eager_layers
compare "GPT-2 small eager, --dedup-verify 3" eager_off eager_verify
compare "GPT-2 small eager, --dedup-selection nvtx_modules (module hooks + NVTX exclude)" eager_off eager_nvtx
compare "GPT-2 small eager, --dedup-selection per_launch_config" eager_off eager_plc
compare "GPT-2 small compiled (Inductor default), inference" compiled_off compiled_layers
compare "GPT-2 small training step (AdamW), eager" train_off train_layers
compare "GPT-2 small compiled, two iterations in the window" compiled_off_i2 compiled_layers_i2
compare "timm vit_small_patch16_224 compiled, inference" vit_compiled_off vit_compiled_layers
compare "BERT-base training step (AdamW), eager" bert_train_off bert_train_layers
for name in $RUNS; do
  [[ -f "$W/$name/report.json" ]] && "$PYTHON" -c "
import json,sys; r=json.load(open('$W/$name/report.json')); d=r['dedup']; m=r['metadata']
print('  $name: dedup', {k: d.get(k) for k in ('mode','selection','classes','instances','kernels','kernels_replayed','kernels_propagated','kernels_without_source','instances_replayed_in_full')}, 'pass A', m.get('timing.pass_a_s'), 's, pass B', m.get('timing.pass_b_s'), 's, started', m.get('ncu.pass_b_start'), m.get('timing.pass_b_early_s'), 's before the attach,', m.get('ncu.attach_attempts'), 'attach attempts')
n=r.get('ncu', {}); print('    ncu rows', n.get('rows'), 'matched', n.get('matched'), 'unmatched rows', n.get('unmatched_rows'), 'unmatched kernels', n.get('unmatched_kernels'))
for f in d.get('differing_instances', [])[:5]: print('    differs:', f['instance'], f['why'][:200])
" >>"$SUMMARY" 2>&1
done

# Fixtures: the captures of the runs FIXTURES names (default: the eager dedup capture), each in
# $W/fixture/NAME: timeline, ncu CSV (gzipped), capture record, structure file, plan, reports.
for name in ${FIXTURES:-eager_layers}; do
  src=$W/$name
  [[ -f "$src/profile.db" ]] || continue
  F=$W/fixture/$name
  mkdir -p "$F"
  for f in trace.opprof trace.json capture.json opprof_structure.json dedup_plan.json ncu.csv report.txt report.json; do
    [[ -f "$src/$f" ]] && cp "$src/$f" "$F/"
  done
  for f in "$F"/trace.json "$F"/ncu.csv; do [[ -f "$f" ]] && gzip -9 -n -f "$f"; done
  grep -h 'opprof profile\|dedup' "$W/$name.err" >"$F/profile_stderr.txt" 2>/dev/null
  say "fixture $name: $(ls "$F" | tr '\n' ' ')"
done

say "done; budget left $(left) s"
cat "$SUMMARY"
