#include "opprof/metrics/bottleneck.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace opprof {
namespace {
bool at_least(double v, double threshold) { return !std::isnan(v) && v >= threshold; }
bool below(double v, double threshold) { return !std::isnan(v) && v < threshold; }
}  // namespace

Bottleneck classify_bottleneck(const BottleneckInput& in) {
  Bottleneck b;
  if (!in.has_counters) {
    b.label = "unmeasured";
    b.why = "no ncu counters for these kernels";
    return b;
  }
  std::string figures;
  auto add = [&](const char* name, double v) {
    if (std::isnan(v)) return;
    if (!figures.empty()) figures += "; ";
    figures += fmt::format("{} {:.0f}%", name, v);
  };
  add("SM", in.sm_pct);
  add("memory", in.memory_pct);
  add("DRAM", in.dram_pct);
  add("tensor", in.tensor_pct);
  add("L1", in.l1_pct);
  add("L2", in.l2_pct);
  add("occupancy", in.occupancy_pct);
  add("issue", in.issue_pct);
  const double mean_ns = in.kernels ? double(in.time_ns) / double(in.kernels) : 0.0;
  const double busiest = std::max(std::isnan(in.sm_pct) ? 0.0 : in.sm_pct, std::isnan(in.memory_pct) ? 0.0 : in.memory_pct);

  if (mean_ns < double(kLaunchBoundMeanNs) && busiest < kLowPct)
    b.label = "launch-bound";  // short kernels that leave every unit idle: the launch, not the work, costs
  else if (at_least(in.dram_pct, kLimiterPct))
    b.label = "dram-bound";
  else if (at_least(in.tensor_pct, kTensorPct))
    b.label = "tensor-bound";
  else if (at_least(in.l2_pct, kLimiterPct))
    b.label = "l2-bound";
  else if (at_least(in.l1_pct, kLimiterPct))
    b.label = "l1-bound";
  else if (at_least(in.sm_pct, kLimiterPct))
    b.label = "compute-bound";
  else if (below(in.occupancy_pct, kLowOccupancyPct) && !at_least(in.issue_pct, kLowPct))
    b.label = "occupancy-limited";
  else
    b.label = "latency-bound";
  b.why = figures;
  if (mean_ns > 0) b.why += fmt::format("; mean kernel {:.1f} us", mean_ns / 1000.0);
  if (in.spill_bytes > 0) b.why += fmt::format("; register spills {:.0f} bytes", in.spill_bytes);
  return b;
}

}  // namespace opprof
