#!/usr/bin/env bash
# Captures one opprof test fixture on a GPU machine: pass A (torch.profiler timeline) and pass B (ncu
# counters over exactly the same iterations), then trims the result to what the engine reads.
#
#   scripts/capture_fixture.sh <name> <workload.py> <eager|inductor> <outdir> [extra opprof.capture args]
#
#   e.g. scripts/capture_fixture.sh gpt2_compiled examples/gpt2.py inductor tests/fixtures/gpt2_compiled
#
# Environment: WARMUP (default 3), ITERS (default 1), PYTHON (default python3), NCU (default: ncu on PATH,
# else the usual CUDA locations), METRICS_FILE (a metric-set TSV; default the engine's data/metrics_default.tsv),
# NCU_TIMEOUT (seconds for pass B, default 900).
#
# Result in <outdir>: trace.json.gz, ncu.csv.gz, ncu.log, capture.json, capture_counters.json,
# opprof_fx_modules.json (compiled workloads), inductor/ (only output_code.py, the provenance JSON and the
# two fx_graph files per graph), README.md (how it was captured). Exit status non-zero with a message on
# any failure; what was captured so far is kept for inspection.
set -euo pipefail

usage() {
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[[ $# -ge 4 ]] || usage

NAME=$1
WORKLOAD=$2
MODE=$3
OUT=$4
shift 4
EXTRA_ARGS=("$@")

WARMUP=${WARMUP:-3}
ITERS=${ITERS:-1}
PYTHON=${PYTHON:-python3}
NCU_TIMEOUT=${NCU_TIMEOUT:-900}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}"

STARTED=$SECONDS
stamp() { date -u +%Y-%m-%dT%H:%M:%SZ; }
say() { printf '[capture_fixture %s +%ds] %s\n' "$(date -u +%H:%M:%S)" "$((SECONDS - STARTED))" "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

case "$MODE" in eager | inductor) ;; *) die "mode must be eager or inductor, not '$MODE'" ;; esac
[[ -f "$WORKLOAD" ]] || die "workload file not found: $WORKLOAD"
WORKLOAD=$(cd "$(dirname "$WORKLOAD")" && pwd)/$(basename "$WORKLOAD")
[[ "$WARMUP" =~ ^[0-9]+$ && "$ITERS" =~ ^[1-9][0-9]*$ ]] || die "WARMUP must be >= 0 and ITERS >= 1"

if [[ -z "${NCU:-}" ]]; then
  NCU=$(command -v ncu || true)
  if [[ -z "$NCU" ]]; then
    for candidate in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/NVIDIA-Nsight-Compute*/ncu; do
      [[ -x "$candidate" ]] && NCU=$candidate && break
    done
  fi
fi
[[ -n "$NCU" && -x "$NCU" ]] || die "ncu not found (put it on PATH or set NCU=/path/to/ncu)"
"$PYTHON" -c 'import opprof.capture' || die "cannot import opprof from $REPO/python with $PYTHON"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# Remove only what an earlier run of this script made, never the whole folder (it may be a typo'd path).
rm -rf "$OUT/cache" "$OUT/inductor" "$OUT/inductor_counters"
rm -f "$OUT"/trace.json "$OUT"/trace.json.gz "$OUT"/ncu.csv "$OUT"/ncu.csv.gz "$OUT"/ncu.stdout "$OUT"/ncu.log \
  "$OUT"/capture.json "$OUT"/capture_counters.json "$OUT"/opprof_fx_modules.json "$OUT"/README.md

# The same arguments for both passes: same iterations, same capture directory (so pass B reuses pass
# A's Inductor/Triton cache under $OUT/cache and runs the same kernels).
CAPTURE_ARGS=(--out "$OUT" --workload "$WORKLOAD" --compile "$MODE" --warmup "$WARMUP" --iters "$ITERS" ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"})
PASS_A=("$PYTHON" -m opprof.capture --pass timeline "${CAPTURE_ARGS[@]}")

say "fixture '$NAME': $WORKLOAD ($MODE), warm-up $WARMUP, measured $ITERS -> $OUT"
say "pass A (timeline) started $(stamp)"
say "  ${PASS_A[*]}"
PASS_A_START=$SECONDS
if ! "${PASS_A[@]}"; then
  die "pass A failed (see the messages above and $OUT/capture.json)"
fi
PASS_A_SECONDS=$((SECONDS - PASS_A_START))
say "pass A done in ${PASS_A_SECONDS}s"

json_field() { # json_field FILE EXPRESSION-over-d
  "$PYTHON" - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
value = eval(sys.argv[2], {"d": d})
print("" if value is None else value)
EOF
}

WINDOW=$(json_field "$OUT/capture.json" 'd["window"]')
CHIP=$(json_field "$OUT/capture.json" '(d.get("device") or {}).get("chip")')
DEVICE_TYPE=$(json_field "$OUT/capture.json" '(d.get("device") or {}).get("type")')
[[ "$DEVICE_TYPE" == cuda ]] || die "pass A ran on '$DEVICE_TYPE', not on a CUDA device: no GPU visible to torch?"
if [[ "$WINDOW" == whole_run ]]; then
  PROFILE_FROM_START=on
else
  PROFILE_FROM_START=off
fi

METRIC_ARGS=()
[[ -n "${METRICS_FILE:-}" ]] && METRIC_ARGS+=(--file "$METRICS_FILE")
if [[ -n "$CHIP" ]]; then
  METRIC_ARGS+=(--chip "$CHIP" --check)
else
  say "warning: no ncu chip known for this GPU; using the chip-independent metric set unchecked"
fi
METRICS=$("$PYTHON" -m opprof.metricset ${METRIC_ARGS[@]+"${METRIC_ARGS[@]}"}) || die "metric set: see the message above"
METRIC_COUNT=$(tr ',' '\n' <<<"$METRICS" | wc -l)

NCU_VERSION=$("$NCU" --version 2>&1 | tail -n 1)
PASS_B=("$NCU" --csv --page raw --print-units base --clock-control none --profile-from-start "$PROFILE_FROM_START"
  --target-processes all --metrics "$METRICS"
  "$PYTHON" -m opprof.capture --pass counters "${CAPTURE_ARGS[@]}")
say "pass B (ncu, $METRIC_COUNT metrics, chip ${CHIP:-?}, $NCU_VERSION) started $(stamp)"
say "  ${PASS_B[*]} > $OUT/ncu.csv 2> $OUT/ncu.log"
PASS_B_START=$SECONDS
set +e
timeout "$NCU_TIMEOUT" "${PASS_B[@]}" >"$OUT/ncu.stdout" 2>"$OUT/ncu.log"
NCU_RC=$?
set -e
PASS_B_SECONDS=$((SECONDS - PASS_B_START))
say "pass B ended in ${PASS_B_SECONDS}s with exit status $NCU_RC"

# ncu writes its own "==PROF==" / "==WARNING==" lines to stdout too: the CSV is the quoted lines only
# (header, units row, one row per kernel); everything else goes to the log.
grep '^"' "$OUT/ncu.stdout" >"$OUT/ncu.csv" || true
{
  echo "---- non-CSV lines ncu wrote to stdout ----"
  grep -v '^"' "$OUT/ncu.stdout" || true
} >>"$OUT/ncu.log"
rm -f "$OUT/ncu.stdout"

if grep -q ERR_NVGPUCTRPERM "$OUT/ncu.log"; then
  die "ncu may not read the GPU performance counters (ERR_NVGPUCTRPERM): run as root, or load the driver with NVreg_RestrictProfilingToAdminUsers=0. See $OUT/ncu.log"
fi
if [[ $NCU_RC -eq 124 ]]; then
  die "pass B ran past NCU_TIMEOUT=${NCU_TIMEOUT}s and was stopped; see $OUT/ncu.log"
fi
if [[ $NCU_RC -ne 0 ]]; then
  tail -n 30 "$OUT/ncu.log" >&2 || true
  die "ncu exited with status $NCU_RC (last lines of $OUT/ncu.log above; pass B's record: $OUT/capture_counters.json)"
fi
if ! head -n 1 "$OUT/ncu.csv" | grep -q '^"ID","Process ID"'; then
  tail -n 30 "$OUT/ncu.log" >&2 || true
  die "ncu printed no CSV header (no kernel profiled in the window?); see $OUT/ncu.log"
fi
PASS_B_STATUS=$(json_field "$OUT/capture_counters.json" 'd["status"]')
[[ "$PASS_B_STATUS" == ok ]] || die "pass B's capture reports status '$PASS_B_STATUS' (see $OUT/capture_counters.json)"

# Sanity checks the engine will repeat: every metric asked for has a column (ncu drops unknown names
# silently), and pass B profiled as many kernels as pass A's trace holds.
"$PYTHON" - "$OUT" "$METRICS" <<'EOF' >&2
import csv, json, sys
out, metrics = sys.argv[1], sys.argv[2].split(",")
with open(f"{out}/ncu.csv", newline="") as f:
    rows = list(csv.reader(f))
header, data = rows[0], [r for r in rows[1:] if r and r[0].strip().isdigit()]
missing = [m for m in metrics if m not in header]
with open(f"{out}/trace.json") as f:
    events = json.load(f)["traceEvents"]
kernels = sum(1 for e in events if e.get("cat") == "kernel")
print(f"[check] ncu rows: {len(data)}; kernels in pass A's trace: {kernels}")
if missing:
    print(f"[check] WARNING: metrics without a column in ncu.csv: {', '.join(missing)}")
if len(data) != kernels:
    print("[check] WARNING: the kernel counts differ; the engine will report the divergence when matching")
EOF
NCU_ROWS=$(grep -c '^"[0-9]' "$OUT/ncu.csv" || true)

# Trim: Inductor's debug folder keeps only what the engine reads; caches and pass B's debug files go.
if [[ -d "$OUT/inductor" ]]; then
  find "$OUT/inductor" -type f ! \( -name output_code.py -o -name inductor_provenance_tracking_node_mappings.json \
    -o -name fx_graph_transformed.py -o -name fx_graph_readable.py \) -delete
  find "$OUT/inductor" -depth -type d -empty -delete
fi
rm -rf "$OUT/cache" "$OUT/inductor_counters"
gzip -9 -n -f "$OUT/ncu.csv"
gzip -9 -n -f "$OUT/trace.json"

TOTAL_SECONDS=$((SECONDS - STARTED))
"$PYTHON" - "$OUT" "$REPO" "$NAME" "$NCU_VERSION" "$METRICS" "$PASS_A_SECONDS" "$PASS_B_SECONDS" "$NCU_ROWS" \
  "$PROFILE_FROM_START" "${PASS_A[*]}" "${PASS_B[*]}" <<'EOF'
import json, os, sys
out, repo, name, ncu_version, metrics, secs_a, secs_b, rows, from_start, cmd_a, cmd_b = sys.argv[1:]
a = json.load(open(os.path.join(out, "capture.json")))
b = json.load(open(os.path.join(out, "capture_counters.json")))
v, d = a.get("versions") or {}, a.get("device") or {}
def rel(text):
    """Paths as a reader of the fixture sees them: the output folder as <outdir>, repository paths relative."""
    return text.replace(out + "/", "<outdir>/").replace(out, "<outdir>").replace(repo + "/", "")
def clocks(record):
    samples = record.get("sm_clock") or {}
    return ", ".join(f"{k} {s.get('mhz')} MHz" for k, s in samples.items()) or "not available"
files = []
for root, _, names in os.walk(out):
    for n in sorted(names):
        p = os.path.join(root, n)
        files.append(f"| `{os.path.relpath(p, out)}` | {os.path.getsize(p):,} |")
wall_a, wall_b = a.get("wall_s") or {}, b.get("wall_s") or {}
text = f"""# Fixture `{name}`

Captured with `scripts/capture_fixture.sh` on {d.get('name')} (compute capability {d.get('compute_capability')},
chip {d.get('chip') or '?'}, {d.get('sm_count')} SMs, driver {d.get('driver') or '?'}, max SM clock
{d.get('max_sm_clock_mhz') or '?'} MHz; clocks not locked: ncu ran with `--clock-control none`).

| | |
|---|---|
| workload | `{rel(a.get('workload') or '')}` ({a.get('compile')}{', train' if a.get('train') else ', inference under torch.no_grad()'}) |
| iterations | {a.get('warmup')} warm-up, {a.get('iters')} measured (the capture window) |
| window | {a.get('window')} |
| torch | {v.get('torch')} (CUDA {v.get('cuda')}, cuDNN {v.get('cudnn')}, Triton {v.get('triton')}) |
| transformers | {v.get('transformers')} |
| Python | {v.get('python')} |
| ncu | {ncu_version} |
| metrics | {len(metrics.split(','))} from the engine's metric set for {d.get('chip') or 'all chips'} |
| kernels profiled by ncu | {rows} |
| pass A | {secs_a} s total; warm-up {wall_a.get('warmup', 0):.2f} s, measured {1e3 * (wall_a.get('measured') or 0):.1f} ms under torch.profiler; SM clock {clocks(a)} |
| pass B | {secs_b} s total (ncu replays); warm-up {wall_b.get('warmup', 0):.2f} s; SM clock {clocks(b)} |

## Commands

Pass A (timeline):

```
{rel(cmd_a)}
```

Pass B (counters; ncu's stdout, minus its own `==PROF==` lines, is `ncu.csv`; its stderr is `ncu.log`):

```
{rel(cmd_b)}
```

Both passes ran with `PYTHONPATH=python`, `TORCH_COMPILE_DEBUG=1`, the Inductor and Triton caches under
`<outdir>/cache` (shared by the passes and deleted afterwards) and Inductor's debug files in
`<outdir>/inductor` (pass A) and `<outdir>/inductor_counters` (pass B, deleted afterwards). ncu ran with
`--profile-from-start {from_start}`: the capture driver brackets the measured iterations with
cudaProfilerStart/Stop. Afterwards `inductor/` was trimmed to `output_code.py`,
`inductor_provenance_tracking_node_mappings.json`, `fx_graph_readable.py` and `fx_graph_transformed.py`,
and `ncu.csv` and `trace.json` were compressed with `gzip -9 -n`.

Metrics: `{metrics}`

## Files

| file | bytes |
|---|---|
""" + "\n".join(sorted(files)) + "\n"
with open(os.path.join(out, "README.md"), "w") as f:
    f.write(text)
EOF

say "fixture '$NAME' done in ${TOTAL_SECONDS}s (pass A ${PASS_A_SECONDS}s, pass B ${PASS_B_SECONDS}s): $OUT"
du -sh "$OUT" >&2
find "$OUT" -type f -printf '  %8s  %P\n' | sort -k2 >&2
