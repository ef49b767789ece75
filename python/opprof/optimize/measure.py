"""What a variant costs, measured in this process: wall time per step with CUDA events (median of N steps,
with the spread), and profiled kernel time per step: the steps recorded by torch.profiler and attributed
by the opprof engine (``opprof attribute``), so the figure is the profile's own sum of kernel durations
and the profile database is kept for ``opprof diff``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Timing:
    median_ms: float
    p25_ms: float
    p75_ms: float
    min_ms: float
    max_ms: float
    steps: int
    clock: str  # "cuda events" or "perf_counter" (no GPU)

    def text(self) -> str:
        return (f"{self.median_ms:.3f} ms median of {self.steps} ({self.clock}; IQR {self.p25_ms:.3f}-{self.p75_ms:.3f}, "
                f"range {self.min_ms:.3f}-{self.max_ms:.3f})")

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def summarize(samples_ms: list[float], clock: str) -> Timing:
    ordered = sorted(samples_ms)
    quartiles = statistics.quantiles(ordered, n=4, method="inclusive") if len(ordered) >= 2 else [ordered[0]] * 3
    return Timing(statistics.median(ordered), quartiles[0], quartiles[2], ordered[0], ordered[-1], len(ordered), clock)


def wall_time(step: Callable[[], Any], device: str, steps: int = 20, warmup: int = 3) -> Timing:
    """Each step timed alone (synchronized before and after), so the spread is the steps' own."""
    import torch

    for _ in range(warmup):
        step()
    samples = []
    if device == "cuda":
        torch.cuda.synchronize()
        for _ in range(steps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        return summarize(samples, "cuda events")
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        samples.append((time.perf_counter() - t0) * 1e3)
    return summarize(samples, "perf_counter")


@dataclass
class KernelTime:
    ns_per_step: float
    kernels_per_step: float
    steps: int
    database: str

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def kernel_time(step: Callable[[], Any], out_dir: Path, steps: int = 3) -> KernelTime:
    """The steps under torch.profiler (after the caller's warm-up), attributed by the engine into
    out_dir/profile.db; kernel time is the profile's kernel durations (kind 'kernel') over the steps."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    import opprof

    out_dir.mkdir(parents=True, exist_ok=True)
    trace = out_dir / "trace.json"
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace))
    profile_db = opprof.attribute(trace=trace, output=out_dir / "profile.db")
    kernels = profile_db["kernels"]
    kernels = kernels[kernels["kind"] == "kernel"]
    result = KernelTime(float(kernels["duration_ns"].sum()) / steps, len(kernels) / steps, steps,
                        str(out_dir / "profile.db"))
    profile_db.close()
    trace.unlink()  # the database holds what was needed; traces of large models are large
    return result
