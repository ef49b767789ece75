#!/usr/bin/env bash
# Quick sanity check of a GPU machine before capturing fixtures (about a minute):
#   scripts/gpu_smoke.sh
# Reports Python packages, the GPU and its clocks, ncu and its access to the performance counters, and
# runs one short opprof pass A (eager MLP) on the GPU. Prints a compact report; exits non-zero when a
# check that the fixture capture depends on fails. Environment: PYTHON (default python3), NCU.
set -uo pipefail

PYTHON=${PYTHON:-python3}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PYTHONPATH="$REPO/python${PYTHONPATH:+:$PYTHONPATH}"
WORK=$(mktemp -d /tmp/opprof_smoke.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

FAILED=()
ok() { printf '  OK    %s\n' "$*"; }
bad() { printf '  FAIL  %s\n' "$*"; FAILED+=("$1"); }
note() { printf '        %s\n' "$*"; }
section() { printf '\n== %s\n' "$*"; }

section "python packages"
if "$PYTHON" - <<'EOF'; then ok "torch sees a CUDA device"; else bad "torch/CUDA"; fi
import importlib, sys
print(f"        python       {sys.version.split()[0]} ({sys.executable})")
for name in ("torch", "triton", "transformers", "pynvml", "opprof"):
    try:
        module = importlib.import_module(name)
        print(f"        {name:<12} {getattr(module, '__version__', 'present')}  ({getattr(module, '__file__', '')})")
    except Exception as exc:
        print(f"        {name:<12} MISSING ({exc})")
import torch
print(f"        torch.cuda   {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}")
if not torch.cuda.is_available():
    print("        torch.cuda.is_available() is False")
    sys.exit(1)
from opprof.metricset import chip_for_device
props = torch.cuda.get_device_properties(0)
chip = chip_for_device(props.name, props.major, props.minor)
print(f"        device 0     {props.name}, cc {props.major}.{props.minor}, {props.multi_processor_count} SMs, "
      f"{props.total_memory / 2**30:.0f} GiB, ncu chip {chip or '?'} ({torch.cuda.device_count()} visible)")
try:
    print(f"        SM clock     {torch.cuda.clock_rate(0)} MHz now (torch.cuda.clock_rate)")
except Exception as exc:
    print(f"        SM clock     not readable through torch.cuda.clock_rate: {exc!r}")
EOF

if out=$("$PYTHON" -m opprof.metricset --device-name "$("$PYTHON" -c 'import torch; print(torch.cuda.get_device_name(0))' 2>/dev/null)" \
  --compute-capability "$("$PYTHON" -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability(0))' 2>/dev/null)" --check 2>&1); then
  ok "metric set: $(tr ',' '\n' <<<"$out" | wc -l) metrics for this chip"
else
  bad "metric set" ; note "$out"
fi

section "GPU (nvidia-smi)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,driver_version,persistence_mode,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,temperature.gpu \
    --format=csv 2>&1 | sed 's/^/        /'
  nvidia-smi -q -d CLOCK 2>/dev/null | grep -E '^(GPU |    (Clocks|Applications Clocks|Default Applications Clocks|Max Clocks|Clock Policy|SM Clock Samples))|^        (Graphics|SM|Memory|Video) +:|Auto Boost' |
    head -n 40 | sed 's/^/        /'
  ok "nvidia-smi"
else
  bad "nvidia-smi not found"
fi

section "ncu"
NCU=${NCU:-$(command -v ncu || true)}
if [[ -z "$NCU" ]]; then
  for candidate in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu; do
    [[ -x "$candidate" ]] && NCU=$candidate && break
  done
fi
if [[ -n "$NCU" && -x "$NCU" ]]; then
  ok "ncu at $NCU: $("$NCU" --version 2>&1 | tail -n 1)"
  start=$SECONDS
  timeout 300 "$NCU" --csv --page raw --print-units base --metrics gpu__time_duration.sum,dram__bytes_read.sum \
    "$PYTHON" -c 'import torch; x = torch.ones(1 << 20, device="cuda"); (x * 2).sum().item()' \
    >"$WORK/ncu.out" 2>"$WORK/ncu.err"
  rc=$?
  rows=$(grep -c '^"[0-9]' "$WORK/ncu.out" || true)
  if grep -q ERR_NVGPUCTRPERM "$WORK/ncu.out" "$WORK/ncu.err"; then
    bad "ncu counters: ERR_NVGPUCTRPERM (no permission for GPU performance counters: run as root or set NVreg_RestrictProfilingToAdminUsers=0)"
  elif [[ $rc -ne 0 || $rows -eq 0 ]]; then
    bad "ncu counters: exit status $rc, $rows kernel rows"
    tail -n 15 "$WORK/ncu.err" "$WORK/ncu.out" | sed 's/^/        /'
  else
    ok "ncu read counters of $rows kernel(s) in $((SECONDS - start)) s"
  fi
else
  bad "ncu not found (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute)"
fi

section "opprof pass A (eager MLP on the GPU, 1 warm-up, 1 measured)"
start=$SECONDS
if "$PYTHON" -m opprof.capture --pass timeline --out "$WORK/cap" --workload "$REPO/examples/mlp.py" \
  --compile eager --warmup 1 --iters 1 >"$WORK/cap.out" 2>"$WORK/cap.err"; then
  if "$PYTHON" - "$WORK/cap" <<'EOF'; then
import json, sys
cap = sys.argv[1]
events = json.load(open(f"{cap}/trace.json"))["traceEvents"]
kernels = [e for e in events if e.get("cat") == "kernel"]
ranges = [e["name"] for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("nn.Module: ")]
record = json.load(open(f"{cap}/capture.json"))
print(f"        {len(kernels)} kernels, {len(ranges)} module ranges, window {record['window']}, "
      f"measured {1e3 * record['wall_s']['measured']:.1f} ms, SM clock {record.get('sm_clock')}")
sys.exit(0 if kernels and ranges else 1)
EOF
    ok "pass A in $((SECONDS - start)) s"
  else
    bad "pass A trace has no kernels or no module ranges"
  fi
else
  bad "pass A failed"
  tail -n 20 "$WORK/cap.err" | sed 's/^/        /'
fi
if [[ -s "$WORK/cap.out" ]]; then
  note "(pass A wrote to stdout: $(head -c 200 "$WORK/cap.out" | tr '\n' ' '))"
fi

section "summary"
if [[ ${#FAILED[@]} -eq 0 ]]; then
  echo "  all checks passed"
else
  echo "  failed: ${FAILED[*]}"
  exit 1
fi
