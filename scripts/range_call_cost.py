#!/usr/bin/env python3
"""Per-call cost of opprof's module and operator ranges, in loops (a micro-benchmark; GPU machine).

  CUDA_INJECTION64_PATH=build-gpu/agents/tracer/libopprof_tracer.so NVTX_INJECTION64_PATH=build-gpu/agents/tracer/libopprof_tracer.so \\
      OPPROF_TRACE_FILE=/tmp/cost.opprof OPPROF_TRACE_WINDOW=1 python3 scripts/range_call_cost.py

With the tracer injected the loops run inside its window, so the ranges are recorded as in pass A. Printed, per
round (best of 7 repeats of 20,000 calls each):
  module call   a no-op module called with four keyword arguments (the shape of a Hugging Face forward): plain,
                and the extra cost with ModuleCallRanges (sys.monitoring, where the extension loads) and with
                ModuleForwardRanges (forward wrappers)
  op ranges     x.view(-1) (an operator that launches nothing) and torch.add(x, x) (one launch): plain, and the
                extra cost with the operator observer (opprof.op_ranges) on
A loop keeps code and data in cache; inside a real step each call costs more (see scripts/overhead_gpt2.py
--breakdown for the figures that count).
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

CALLS = 20000
REPEATS = 7


def per_call_ns(fn) -> float:
    return min(timeit.repeat(fn, number=CALLS, repeat=REPEATS)) / CALLS * 1e9


def main() -> int:
    import torch

    from opprof.call_ranges import module_ranges_for
    from opprof.hooks import ModuleForwardRanges
    from opprof.op_ranges import OperatorRanges

    class Leaf(torch.nn.Module):
        def forward(self, x, attention_mask=None, head_mask=None, output_attentions=False, use_cache=False):
            return x

    class Root(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.leaf = Leaf()

    if not torch.cuda.is_available():
        print("error: no CUDA device (the operator ranges need torch's CUDA build)", file=sys.stderr)
        return 2
    root = Root()
    x = torch.ones(4, device="cuda")

    def call():
        return root.leaf(x, attention_mask=None, head_mask=None, output_attentions=False, use_cache=False)

    probe, reason = module_ranges_for(root)
    print(f"module ranges: {probe.method}" + (f" ({reason})" if reason else ""), flush=True)
    torch.cuda.profiler.start()
    try:
        for _ in range(2):
            plain = per_call_ns(call)
            with module_ranges_for(root)[0]:
                fast = per_call_ns(call)
            with ModuleForwardRanges(root):
                wrapped = per_call_ns(call)
            print(f"module call: plain {plain:.0f} ns, {probe.method} +{fast - plain:.0f} ns, "
                  f"forward_wrappers +{wrapped - plain:.0f} ns", flush=True)
            view, add = per_call_ns(lambda: x.view(-1)), per_call_ns(lambda: torch.add(x, x))
            torch.cuda.synchronize()
            with OperatorRanges() as ranges:
                view_ranged, add_ranged = per_call_ns(lambda: x.view(-1)), per_call_ns(lambda: torch.add(x, x))
                torch.cuda.synchronize()
            print(f"op ranges ({ranges.source}): view {view:.0f} ns +{view_ranged - view:.0f}, "
                  f"add {add:.0f} ns +{add_ranged - add:.0f}", flush=True)
    finally:
        torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
