#!/usr/bin/env python3
"""Step-time overhead of opprof's capture backends on GPT-2 small, in interleaved blocks inside one process.

  # the tracer: the process must be started with the tracer injected, in window-only mode
  CUDA_INJECTION64_PATH=.../libopprof_tracer.so NVTX_INJECTION64_PATH=... OPPROF_TRACE_FILE=t.opprof \\
      OPPROF_TRACE_WINDOW=1 python scripts/overhead_gpt2.py --compile eager --backend tracer
  # torch.profiler (a process without the tracer: both would subscribe to CUPTI)
  python scripts/overhead_gpt2.py --compile inductor --backend torch

The machine a GPU is lent on drifts by tens of percent over minutes, so modes compared in separate processes
minutes apart measure the drift. Here the compared conditions alternate in blocks of --block steps, for
--rounds rounds, in one process (10 x 5 = 50 measured steps per condition by default, after 10 warm-up
steps); each step is timed with CUDA events and followed by torch.cuda.synchronize(). Printed per condition:
the median step over all its steps, and the overhead as the median over rounds of (block median / the same
round's "none" block median - 1).

Conditions, --backend tracer (what pass A of `opprof profile --backend tracer` runs):
  none         nothing: the tracer's window is closed, in which window-only mode it records nothing (no GPU
               activity, no API records, no launch callbacks)
  tracer_bare  window open: kernels, memcpy/memset, launch API calls; no ranges
  tracer       window open, operator ranges (opprof.op_ranges: the torch observer, else emit_nvtx) and, eager,
               module ranges (opprof.call_ranges.module_ranges_for: sys.monitoring on Module._call_impl where
               the opprof_call_ranges extension loads, else forward wrappers), as pass A runs them
  with --breakdown (eager), also:
  tracer_floor            window open, no ranges, and a RecordFunction callback that does nothing (the torch
                          observer's empty callback): what kernel records plus RecordFunction cost before any
                          operator range is kept, the floor of operator attribution through RecordFunction
  tracer_ops              window open, operator ranges only
  tracer_modules          window open, module ranges only (the method pass A uses)
  tracer_module_wrappers  window open, module ranges from forward wrappers (ModuleForwardRanges)
Conditions, --backend torch:
  none            nothing
  torch_profiler  torch.profiler.profile(activities=[CPU, CUDA]), eager with the module-range hooks
                  (record_function); the trace is not exported (not part of a step)
Compiled mode uses torch.compile(model) (default mode); its graphs get no module ranges, as in pass A.

--reduce-overhead-check (tracer only): instead, compiles with mode="reduce-overhead" (CUDA graphs) and runs 1
measured step inside the window, with operator ranges on from the first warm-up step, because CUDA graphs are
captured during warm-up and their replayed kernels lead back to the ranges open at capture (the tracer's
CUDA-graph attribution figure).

One line per condition: "overhead compile=.. backend=.. mode=.. median_ms=.. overhead_pct=.. steps=.. rounds=[..]".
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "examples"))

CONDITIONS = {"tracer": ("none", "tracer_bare", "tracer"), "torch": ("none", "torch_profiler")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compile", choices=("eager", "inductor"), required=True)
    parser.add_argument("--backend", choices=tuple(CONDITIONS), required=True)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--block", type=int, default=5, help="steps per condition per round")
    parser.add_argument("--batch", type=int, default=None, help="GPT-2 batch size (default: examples/gpt2.py's)")
    parser.add_argument("--seq", type=int, default=None, help="GPT-2 sequence length (default: examples/gpt2.py's)")
    parser.add_argument("--reduce-overhead-check", action="store_true",
                        help='torch.compile(mode="reduce-overhead"), 1 measured step in the window')
    parser.add_argument("--breakdown", action="store_true",
                        help="tracer, eager: also the RecordFunction floor, operator ranges alone, module ranges "
                             "alone, and module ranges from forward wrappers")
    args = parser.parse_args()
    if min(args.rounds, args.block) < 1 or args.warmup < 0:
        parser.error("--rounds and --block must be >= 1, --warmup >= 0")
    if (args.batch is not None and args.batch < 1) or (args.seq is not None and not 1 <= args.seq <= 1024):
        parser.error("--batch must be >= 1 and --seq from 1 to 1024 (GPT-2's context)")

    injected = bool(os.environ.get("CUDA_INJECTION64_PATH"))
    if args.backend == "tracer" and not (injected and os.environ.get("OPPROF_TRACE_WINDOW") == "1"):
        print("error: --backend tracer needs the process started with CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH "
              "pointing at libopprof_tracer.so and OPPROF_TRACE_WINDOW=1 (scripts/overhead_gpt2.sh sets them)",
              file=sys.stderr)
        return 2
    if args.backend == "torch" and injected:
        print("error: --backend torch must run without the tracer injected (both would subscribe to CUPTI)",
              file=sys.stderr)
        return 2
    if args.reduce_overhead_check and args.backend != "tracer":
        parser.error("--reduce-overhead-check runs under the tracer")
    if args.breakdown and (args.backend != "tracer" or args.compile != "eager"):
        parser.error("--breakdown is for --backend tracer --compile eager")

    import torch

    if not torch.cuda.is_available():
        print("error: no CUDA device", file=sys.stderr)
        return 2
    import gpt2
    from opprof.op_ranges import OperatorRanges, load_observer

    t_setup = time.perf_counter()
    batch, seq = args.batch or gpt2.BATCH, args.seq or gpt2.SEQ
    print(f"workload: GPT-2 small, batch {batch} x sequence {seq}", flush=True)
    model, inputs = gpt2.get_model_and_input(device="cuda", batch=batch, seq=seq)
    compiled = args.compile == "inductor" or args.reduce_overhead_check
    if args.reduce_overhead_check:
        runner = torch.compile(model, mode="reduce-overhead")
    elif compiled:
        runner = torch.compile(model)
    else:
        runner = model

    start_event = torch.cuda.Event(enable_timing=True)
    end_event = torch.cuda.Event(enable_timing=True)

    def timed_steps(count: int) -> list[float]:
        times = []
        for _ in range(count):
            start_event.record()
            runner(**inputs)
            end_event.record()
            torch.cuda.synchronize()
            times.append(start_event.elapsed_time(end_event))
        return times

    if args.reduce_overhead_check:
        return reduce_overhead_check(args, timed_steps, OperatorRanges)

    module_ranges_reason = ""
    if args.backend == "tracer" and not compiled:
        from opprof.call_ranges import module_ranges_for

        probe, module_ranges_reason = module_ranges_for(model)
        print(f"module ranges: {probe.method}" + (f" ({module_ranges_reason})" if module_ranges_reason else ""),
              flush=True)

    def condition(name: str) -> contextlib.AbstractContextManager[Any]:
        stack = contextlib.ExitStack()
        if name.startswith("tracer"):
            stack.callback(torch.cuda.profiler.stop)  # the window closes last
            torch.cuda.profiler.start()
            if name in ("tracer", "tracer_ops"):
                stack.enter_context(OperatorRanges())
            if name == "tracer_floor":
                assert observer is not None
                observer.enable(empty=True)
                stack.callback(observer.disable)
            if name in ("tracer", "tracer_modules") and not compiled:
                from opprof.call_ranges import module_ranges_for

                stack.enter_context(module_ranges_for(model)[0])
            if name == "tracer_module_wrappers":
                from opprof.hooks import ModuleForwardRanges

                stack.enter_context(ModuleForwardRanges(model))
        elif name == "torch_profiler":
            activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
            stack.enter_context(torch.profiler.profile(activities=activities))
            if not compiled:
                from opprof.hooks import ModuleRangeHooks

                stack.enter_context(ModuleRangeHooks(model))
        return stack

    names = CONDITIONS[args.backend]
    observer = None
    if args.breakdown:
        names = ("none", "tracer_bare", "tracer_floor", "tracer_ops", "tracer_modules", "tracer_module_wrappers",
                 "tracer")
        observer, reason = load_observer()
        if observer is None:
            print(f"no tracer_floor condition: the torch observer is not available ({reason})", flush=True)
            names = tuple(name for name in names if name != "tracer_floor")
    blocks: dict[str, list[list[float]]] = {name: [] for name in names}
    with torch.no_grad():
        t0 = time.perf_counter()
        timed_steps(args.warmup)
        warmup_s = time.perf_counter() - t0
        for _ in range(args.rounds):
            for name in names:
                with condition(name):
                    blocks[name].append(timed_steps(args.block))
    base = [statistics.median(b) for b in blocks["none"]]
    for name in names:
        medians = [statistics.median(b) for b in blocks[name]]
        overhead = statistics.median(m / n - 1 for m, n in zip(medians, base)) * 100
        steps = [t for b in blocks[name] for t in b]
        print(f"overhead compile={args.compile} backend={args.backend} mode={name} "
              f"median_ms={statistics.median(steps):.3f} overhead_pct={overhead:+.1f} steps={len(steps)} "
              f"rounds=[{' '.join(f'{m:.3f}' for m in medians)}] warmup_s={warmup_s:.1f} "
              f"total_s={time.perf_counter() - t_setup:.1f}", flush=True)
    window_steps = sum(len(b) for name in names if name.startswith("tracer") for b in blocks[name])
    print(f"window_steps={window_steps}", flush=True)
    return 0


def reduce_overhead_check(args: argparse.Namespace, timed_steps: Callable[[int], list[float]], ranges: Any) -> int:
    import torch

    warmup = max(args.warmup, 3)  # cudagraph trees record on the third call
    # CUDA graphs are captured during warm-up: their kernels can only lead back to ranges open then.
    with torch.no_grad(), ranges() as op_ranges:
        timed_steps(warmup)
        torch.cuda.profiler.start()
        times = timed_steps(1)
        torch.cuda.profiler.stop()
    print(f"overhead compile=reduce-overhead backend=tracer mode=tracer median_ms={times[0]:.3f} steps=1 "
          f"warmup={warmup} operator_ranges={op_ranges.describe().split(' ')[0]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
