#pragma once
// Bottleneck class of a group of kernels from its aggregated counters. The rules and thresholds are
// documented in docs/bottlenecks.md; they follow Nsight Compute's own speed-of-light reading: a unit
// above ~60 % of its peak is the limiter, and when nothing is, the kernel waits on latency.
#include <cstdint>
#include <string>

namespace opprof {

struct BottleneckInput {
  std::uint64_t kernels = 0;
  std::int64_t time_ns = 0;
  bool has_counters = false;
  // Percent of peak; NaN when the metric set lacks the counter.
  double sm_pct, memory_pct, dram_pct, tensor_pct, l1_pct, l2_pct, occupancy_pct, issue_pct;
  double spill_bytes = 0;
};

struct Bottleneck {
  std::string label;  // "dram-bound", "tensor-bound", "compute-bound", "l2-bound", "l1-bound", "occupancy-limited",
                      // "latency-bound", "launch-bound", "unmeasured"
  std::string why;    // the figures behind it ("DRAM 72% of peak; SM 31%; ...")
};

// Thresholds, in percent of peak, and the mean duration under which a kernel is launch-bound.
inline constexpr double kLimiterPct = 60.0;
inline constexpr double kTensorPct = 50.0;
inline constexpr double kLowPct = 30.0;
inline constexpr double kLowOccupancyPct = 25.0;
inline constexpr std::int64_t kLaunchBoundMeanNs = 5000;

Bottleneck classify_bottleneck(const BottleneckInput& in);

}  // namespace opprof
