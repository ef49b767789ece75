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

// "use the tensor cores ..." or "fewer instructions ...": what to do about a compute-bound kernel.
const char* compute_advice(const BottleneckInput& in) {
  return fp32_on_cuda_cores(in)
             ? "use the tensor cores (TF32/BF16): FP32 FMAs on the CUDA cores run far below the tensor-core rate"
             : "fewer instructions: cheaper math, less index arithmetic, or matmul-like work on the tensor cores";
}

// The figures the rules read, derived once from the counters.
struct Figures {
  double mean_ns = 0;
  double busiest = 0;  // the larger of SM and memory throughput
  double l1 = 0, l2 = 0;
  // The occupancy the tighter of registers and shared memory allows, and which one it is.
  bool registers_tighter = false;
  double cap = 0;
  const char* cap_by = "";
  bool occupancy_capped = false;
};

Figures derive_figures(const BottleneckInput& in) {
  Figures f;
  f.mean_ns = in.kernels ? double(in.time_ns) / double(in.kernels) : 0.0;
  f.busiest = std::max(or_zero(in.sm_pct), or_zero(in.memory_pct));
  f.l1 = or_zero(in.l1_pct);
  f.l2 = or_zero(in.l2_pct);
  f.registers_tighter = !std::isnan(in.register_cap_pct) && !(in.shared_mem_cap_pct < in.register_cap_pct);
  f.cap = f.registers_tighter ? in.register_cap_pct : in.shared_mem_cap_pct;
  f.cap_by = f.registers_tighter ? "registers" : "shared memory";
  // The resources hold the SM to a few warps, the SM holds that many, and they mostly stall: more resident
  // warps would keep more loads in flight. Checked before L1 and L2, whose traffic is then what those few
  // warps generate (a dependent-load chain capped at 8 warps per SM runs L2 at 80 %); DRAM at its limit, a
  // busy tensor or FMA pipe still decide first.
  f.occupancy_capped = !std::isnan(f.cap) && f.cap <= kLowOccupancyPct &&
                       at_least(in.occupancy_pct, kCapReachedFraction * f.cap) && !at_least(in.issue_pct, kLowPct);
  return f;
}

// The class of a unit at its limit, with the figure that decided it ("DRAM 91% of peak >= 60%").
Bottleneck at_limit(const char* label, const char* unit, double v, double limit, const char* advice) {
  return {label, fmt::format("{} {:.0f}% of peak >= {:.0f}%", unit, v, limit), advice, {}};
}

// Label, reason and advice: the first rule that holds, in this order.
Bottleneck first_rule(const BottleneckInput& in, const Figures& f) {
  // Short kernels that leave every unit idle: the launch, not the work, costs.
  if (f.mean_ns < double(kLaunchBoundMeanNs) && f.busiest < kLowPct)
    return {"launch-bound",
            fmt::format("mean kernel {:.1f} us < {} us and the busiest unit at {:.0f}% < {:.0f}% of peak",
                        f.mean_ns / 1000.0, kLaunchBoundMeanNs / 1000, f.busiest, kLowPct),
            "fuse kernels, or capture CUDA graphs (torch.compile mode=\"reduce-overhead\")", {}};
  if (at_least(in.dram_pct, kLimiterPct))
    return at_limit("dram-bound", "DRAM", in.dram_pct, kLimiterPct,
                    "move fewer bytes: fuse producers into consumers, lower precision, better reuse");
  if (at_least(in.tensor_pct, kTensorPct))
    return at_limit("tensor-bound", "tensor pipe", in.tensor_pct, kTensorPct,
                    "already on the tensor cores' fast path: fewer FLOPs (shapes, FP8) or overlap with other work");
  // Compute is checked before L1 and L2: a SIMT GEMM keeps its shared memory busy feeding the FMAs, and the
  // FMAs, not bank conflicts, are what the tensor cores would remove.
  if (at_least(in.fma_pct, kLimiterPct))
    return at_limit("compute-bound", "FMA pipe", in.fma_pct, kLimiterPct, compute_advice(in));
  if (at_least(in.sm_pct, kLimiterPct) && in.sm_pct >= f.l1 && in.sm_pct >= f.l2)
    return {"compute-bound",
            fmt::format("SM {:.0f}% of peak >= {:.0f}%, above L1 {:.0f}% and L2 {:.0f}%", in.sm_pct, kLimiterPct,
                        f.l1, f.l2),
            compute_advice(in), {}};
  if (f.occupancy_capped)
    return {"occupancy-limited",
            fmt::format("{} cap occupancy at {:.1f}% <= {:.0f}% of the SM's warps, achieved {:.1f}%, and the warps "
                        "issue in {:.0f}% < {:.0f}% of cycles",
                        f.cap_by, f.cap, kLowOccupancyPct, in.occupancy_pct, or_zero(in.issue_pct), kLowPct),
            f.registers_tighter ? "fewer registers per thread (__launch_bounds__, smaller tiles) so that more warps fit"
                                : "less shared memory per block (smaller tiles, fewer stages) so that more blocks fit",
            {}};
  if (at_least(in.l2_pct, kLimiterPct))
    return at_limit("l2-bound", "L2", in.l2_pct, kLimiterPct, "tile for L2 reuse, fewer re-reads of the same data");
  if (at_least(in.l1_pct, kLimiterPct))
    return at_limit("l1-bound", "L1/shared", in.l1_pct, kLimiterPct,
                    "shared-memory bank conflicts, uncoalesced or scattered accesses");
  if (at_least(in.sm_pct, kLimiterPct))
    return at_limit("compute-bound", "SM", in.sm_pct, kLimiterPct, compute_advice(in));

  std::string reason = fmt::format("no unit at {:.0f}% of peak (busiest {:.0f}%); ", kLimiterPct,
                                   std::max({f.busiest, f.l1, f.l2, or_zero(in.dram_pct)}));
  if (std::isnan(f.cap))
    reason += "the occupancy cap is unknown";
  else if (f.cap > kLowOccupancyPct)
    reason += fmt::format("occupancy not capped by registers or shared memory (they allow {:.0f}%)", f.cap);
  else
    reason += fmt::format("the {} cap of {:.1f}% is not what holds the warps back (achieved {:.1f}%, issue {:.0f}%)",
                          f.cap_by, f.cap, or_zero(in.occupancy_pct), or_zero(in.issue_pct));
  return {"latency-bound", std::move(reason),
          "more independent work in flight: more warps or blocks, more loads per thread (ILP), prefetching; "
          "dependent loads and barriers stall here",
          {}};
}

}  // namespace

Bottleneck classify_bottleneck(const BottleneckInput& in) {
  if (!in.has_counters) {
    Bottleneck b{"unmeasured", "no ncu counters for these kernels",
                 "see the report's ncu section for why no ncu row matched them", {}};
    b.why = b.reason + ". Next: " + b.advice;
    return b;
  }
  const Figures f = derive_figures(in);
  Bottleneck b = first_rule(in, f);

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
  if (f.cap < 100) figures += fmt::format("{}occupancy cap {:.1f}% ({})", figures.empty() ? "" : ", ", f.cap, f.cap_by);
  b.why = b.reason;
  if (!figures.empty()) b.why += "; " + figures;
  if (f.mean_ns > 0) b.why += fmt::format("; mean kernel {:.1f} us", f.mean_ns / 1000.0);
  if (in.spill_bytes > 0) b.why += fmt::format("; register spills {:.0f} bytes", in.spill_bytes);
  b.why += ". Next: " + b.advice;
  return b;
}

}  // namespace opprof
