#!/usr/bin/env python3
"""Step-time overhead of opprof's capture backends on GPT-2 small, one mode per process.

  python scripts/overhead_gpt2.py --compile eager --mode none
  python scripts/overhead_gpt2.py --compile inductor --mode torch_profiler
  CUDA_INJECTION64_PATH=.../libopprof_tracer.so NVTX_INJECTION64_PATH=... OPPROF_TRACE_FILE=t.opprof \\
      OPPROF_TRACE_WINDOW=1 python scripts/overhead_gpt2.py --compile eager --mode tracer

Runs 10 warm-up steps, then 50 measured steps, each timed with CUDA events around the step and followed
by torch.cuda.synchronize(); prints one line "overhead compile=.. mode=.. median_ms=.. ..." (the median).
What is active over the 50 steps is what pass A of `opprof profile` runs:
  none            nothing
  torch_profiler  torch.profiler.profile(activities=[CPU, CUDA]); eager: the module-range hooks
                  (record_function); the trace is not exported (not part of a step)
  tracer          the process was started with libopprof_tracer.so injected (the driver sets the
                  environment); operator ranges from opprof.op_ranges (the torch observer library, else
                  emit_nvtx); eager: module ranges as NVTX from forward wrappers (ModuleForwardRanges)
and, to show where the tracer's cost lies:
  tracer_bare     the tracer injected, nothing else (kernels, launches, window; no ranges)
  tracer_emit_nvtx  the tracer with torch's emit_nvtx and, eager, module ranges from global module hooks
                  (what pass A did before the observer)
Every mode brackets the 50 steps with torch.cuda.profiler.start()/stop() (the tracer's window; a no-op
otherwise), so all modes run the same calls. Compiled mode uses torch.compile(model) (default mode);
its graphs get no module hooks, as in pass A.

--reduce-overhead-check: instead, compiles with mode="reduce-overhead" (CUDA graphs) and runs 1 measured
step inside the window, with operator ranges on from the first warm-up step on, because CUDA graphs are
captured during warm-up and their replayed kernels lead back to the ranges open at capture (the tracer's
CUDA-graph attribution figure).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "examples"))

WARMUP = 10
STEPS = 50


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compile", choices=("eager", "inductor"), required=True)
    parser.add_argument("--mode", choices=("none", "torch_profiler", "tracer", "tracer_bare", "tracer_emit_nvtx"),
                        required=True)
    parser.add_argument("--warmup", type=int, default=WARMUP)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--reduce-overhead-check", action="store_true",
                        help='torch.compile(mode="reduce-overhead"), 1 measured step in the window')
    args = parser.parse_args()

    tracer = args.mode.startswith("tracer")
    if tracer and not os.environ.get("CUDA_INJECTION64_PATH"):
        print("error: --mode tracer needs the process started with CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH "
              "pointing at libopprof_tracer.so (scripts/overhead_gpt2.sh sets them)", file=sys.stderr)
        return 2

    import torch

    if not torch.cuda.is_available():
        print("error: no CUDA device", file=sys.stderr)
        return 2
    from gpt2 import get_model_and_input

    t_setup = time.perf_counter()
    model, inputs = get_model_and_input(device="cuda")
    compiled = args.compile == "inductor" or args.reduce_overhead_check
    if args.reduce_overhead_check:
        runner = torch.compile(model, mode="reduce-overhead")
    elif compiled:
        runner = torch.compile(model)
    else:
        runner = model

    hooks = None
    if not compiled and args.mode not in ("none", "tracer_bare"):
        from opprof.hooks import ModuleForwardRanges, ModuleRangeHooks, NvtxEmitter

        if args.mode == "tracer":
            hooks = ModuleForwardRanges(model).install()
        else:
            hooks = ModuleRangeHooks(model, NvtxEmitter() if tracer else None).install()

    def step() -> None:
        runner(**inputs)

    steps = 1 if args.reduce_overhead_check else args.steps
    warmup = max(args.warmup, 3) if args.reduce_overhead_check else args.warmup  # cudagraph trees record on step 3
    times_ms: list[float] = []
    # CUDA graphs are captured during warm-up: their kernels can only lead back to ranges open then, so the
    # reduce-overhead check runs emit_nvtx from the first step (the figure it prints depends on it).
    from opprof.op_ranges import OperatorRanges

    capture_ranges = OperatorRanges() if args.reduce_overhead_check else contextlib.nullcontext()
    with torch.no_grad(), capture_ranges:
        t0 = time.perf_counter()
        for _ in range(warmup):
            step()
        torch.cuda.synchronize()
        warmup_s = time.perf_counter() - t0

        if args.mode == "torch_profiler":
            active = torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA])
        elif args.mode == "tracer" and not args.reduce_overhead_check:
            active = OperatorRanges()
        elif args.mode == "tracer_emit_nvtx":
            active = torch.autograd.profiler.emit_nvtx()
        else:
            active = contextlib.nullcontext()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.profiler.start()
        with active:
            for _ in range(steps):
                start.record()
                step()
                end.record()
                torch.cuda.synchronize()
                times_ms.append(start.elapsed_time(end))
        torch.cuda.profiler.stop()
    if hooks is not None:
        hooks.uninstall()
    median = statistics.median(times_ms)
    ranges = active.describe() if isinstance(active, OperatorRanges) else ""
    print(f"overhead compile={'reduce-overhead' if args.reduce_overhead_check else args.compile} mode={args.mode} "
          f"median_ms={median:.3f} min_ms={min(times_ms):.3f} steps={steps} warmup={warmup} "
          f"warmup_s={warmup_s:.1f} total_s={time.perf_counter() - t_setup:.1f}"
          + (f" operator_ranges={ranges.split(' ')[0]}" if ranges else ""), flush=True)
    if ranges:
        print(f"operator ranges: {ranges}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
