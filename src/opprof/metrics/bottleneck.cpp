#include "opprof/metrics/bottleneck.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace opprof {
namespace {

bool at_least(double v, double threshold) { return !std::isnan(v) && v >= threshold; }
double or_zero(double v) { return std::isnan(v) ? 0.0 : v; }

// "SM 85%" for a known figure.
std::string pct(const char* name, double v) { return fmt::format("{} {:.0f}%", name, v); }

// FP32 work on the CUDA cores with the tensor pipe idle: a matmul-like kernel the tensor cores would run
// several times faster (TF32 for fp32 inputs, or BF16).
bool fp32_on_cuda_cores(const BottleneckInput& in) {
  if (at_least(in.tensor_pct, kTensorIdlePct)) return false;
  if (in.fp32_flops < 0) return at_least(in.fma_pct, kLimiterPct);  // no FLOP counters: the busy FMA pipe says it
  return in.fp32_flops > std::max(in.tensor_flops, 0.0);
}

}  // namespace

Bottleneck classify_bottleneck(const BottleneckInput& in) {
  Bottleneck b;
  if (!in.has_counters) {
    b.label = "unmeasured";
    b.reason = "no ncu counters for these kernels";
    b.advice = "see the report's ncu section for why no ncu row matched them";
    b.why = b.reason + ". Next: " + b.advice;
    return b;
  }
  const double mean_ns = in.kernels ? double(in.time_ns) / double(in.kernels) : 0.0;
  const double busiest = std::max(or_zero(in.sm_pct), or_zero(in.memory_pct));
  const double l1 = or_zero(in.l1_pct), l2 = or_zero(in.l2_pct);
  // The occupancy the tighter of registers and shared memory allows, and which one it is.
  const bool registers_tighter =
      !std::isnan(in.register_cap_pct) && !(in.shared_mem_cap_pct < in.register_cap_pct);
  const double cap = registers_tighter ? in.register_cap_pct : in.shared_mem_cap_pct;
  const char* cap_by = registers_tighter ? "registers" : "shared memory";
  // The resources hold the SM to a few warps, the SM holds that many, and they mostly stall: more resident
  // warps would keep more loads in flight. Checked before L1 and L2, whose traffic is then what those few
  // warps generate (a dependent-load chain capped at 8 warps per SM runs L2 at 80 %); DRAM at its limit, a
  // busy tensor or FMA pipe still decide first.
  const bool occupancy_capped = !std::isnan(cap) && cap <= kLowOccupancyPct &&
                                at_least(in.occupancy_pct, kCapReachedFraction * cap) && !at_least(in.issue_pct, kLowPct);

  if (mean_ns < double(kLaunchBoundMeanNs) && busiest < kLowPct) {
    // Short kernels that leave every unit idle: the launch, not the work, costs.
    b.label = "launch-bound";
    b.reason = fmt::format("mean kernel {:.1f} us < {} us and the busiest unit at {:.0f}% < {:.0f}% of peak",
                           mean_ns / 1000.0, kLaunchBoundMeanNs / 1000, busiest, kLowPct);
    b.advice = "fuse kernels, or capture CUDA graphs (torch.compile mode=\"reduce-overhead\")";
  } else if (at_least(in.dram_pct, kLimiterPct)) {
    b.label = "dram-bound";
    b.reason = fmt::format("DRAM {:.0f}% of peak >= {:.0f}%", in.dram_pct, kLimiterPct);
    b.advice = "move fewer bytes: fuse producers into consumers, lower precision, better reuse";
  } else if (at_least(in.tensor_pct, kTensorPct)) {
    b.label = "tensor-bound";
    b.reason = fmt::format("tensor pipe {:.0f}% of peak >= {:.0f}%", in.tensor_pct, kTensorPct);
    b.advice = "already on the tensor cores' fast path: fewer FLOPs (shapes, FP8) or overlap with other work";
  } else if (at_least(in.fma_pct, kLimiterPct) ||
             (at_least(in.sm_pct, kLimiterPct) && in.sm_pct >= l1 && in.sm_pct >= l2)) {
    // Checked before L1 and L2: a SIMT GEMM keeps its shared memory busy feeding the FMAs, and the FMAs,
    // not bank conflicts, are what the tensor cores would remove.
    b.label = "compute-bound";
    b.reason = at_least(in.fma_pct, kLimiterPct)
                   ? fmt::format("FMA pipe {:.0f}% of peak >= {:.0f}%", in.fma_pct, kLimiterPct)
                   : fmt::format("SM {:.0f}% of peak >= {:.0f}%, above L1 {:.0f}% and L2 {:.0f}%", in.sm_pct,
                                 kLimiterPct, l1, l2);
  } else if (occupancy_capped) {
    b.label = "occupancy-limited";
    b.reason = fmt::format("{} cap occupancy at {:.1f}% <= {:.0f}% of the SM's warps, achieved {:.1f}%, and the warps "
                           "issue in {:.0f}% < {:.0f}% of cycles",
                           cap_by, cap, kLowOccupancyPct, in.occupancy_pct, or_zero(in.issue_pct), kLowPct);
    b.advice = registers_tighter ? "fewer registers per thread (__launch_bounds__, smaller tiles) so that more warps fit"
                                 : "less shared memory per block (smaller tiles, fewer stages) so that more blocks fit";
  } else if (at_least(in.l2_pct, kLimiterPct)) {
    b.label = "l2-bound";
    b.reason = fmt::format("L2 {:.0f}% of peak >= {:.0f}%", in.l2_pct, kLimiterPct);
    b.advice = "tile for L2 reuse, fewer re-reads of the same data";
  } else if (at_least(in.l1_pct, kLimiterPct)) {
    b.label = "l1-bound";
    b.reason = fmt::format("L1/shared {:.0f}% of peak >= {:.0f}%", in.l1_pct, kLimiterPct);
    b.advice = "shared-memory bank conflicts, uncoalesced or scattered accesses";
  } else if (at_least(in.sm_pct, kLimiterPct)) {
    b.label = "compute-bound";
    b.reason = fmt::format("SM {:.0f}% of peak >= {:.0f}%", in.sm_pct, kLimiterPct);
  } else {
    b.label = "latency-bound";
    b.reason = fmt::format("no unit at {:.0f}% of peak (busiest {:.0f}%); ", kLimiterPct,
                           std::max({busiest, l1, l2, or_zero(in.dram_pct)}));
    if (std::isnan(cap))
      b.reason += "the occupancy cap is unknown";
    else if (cap > kLowOccupancyPct)
      b.reason += fmt::format("occupancy not capped by registers or shared memory (they allow {:.0f}%)", cap);
    else
      b.reason += fmt::format("the {} cap of {:.1f}% is not what holds the warps back (achieved {:.1f}%, issue {:.0f}%)",
                              cap_by, cap, or_zero(in.occupancy_pct), or_zero(in.issue_pct));
    b.advice = "more independent work in flight: more warps or blocks, more loads per thread (ILP), prefetching; "
               "dependent loads and barriers stall here";
  }
  if (b.label == "compute-bound")
    b.advice = fp32_on_cuda_cores(in)
                   ? "use the tensor cores (TF32/BF16): FP32 FMAs on the CUDA cores run far below the tensor-core rate"
                   : "fewer instructions: cheaper math, less index arithmetic, or matmul-like work on the tensor cores";

  std::string figures;
  auto add = [&](const char* name, double v) {
    if (std::isnan(v)) return;
    figures += (figures.empty() ? "" : ", ") + pct(name, v);
  };
  add("SM", in.sm_pct);
  add("memory", in.memory_pct);
  add("DRAM", in.dram_pct);
  add("tensor", in.tensor_pct);
  add("FMA", in.fma_pct);
  add("L1", in.l1_pct);
  add("L2", in.l2_pct);
  add("occupancy", in.occupancy_pct);
  add("issue", in.issue_pct);
  if (cap < 100) figures += fmt::format("{}occupancy cap {:.1f}% ({})", figures.empty() ? "" : ", ", cap, cap_by);
  b.why = b.reason;
  if (!figures.empty()) b.why += "; " + figures;
  if (mean_ns > 0) b.why += fmt::format("; mean kernel {:.1f} us", mean_ns / 1000.0);
  if (in.spill_bytes > 0) b.why += fmt::format("; register spills {:.0f} bytes", in.spill_bytes);
  b.why += ". Next: " + b.advice;
  return b;
}

}  // namespace opprof
