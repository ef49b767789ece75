#pragma once
// Bottleneck class of a group of kernels from its aggregated counters. The rules and thresholds are
// documented in docs/bottlenecks.md; they follow Nsight Compute's own speed-of-light reading: a unit
// above ~60 % of its peak is the limiter, and when nothing is, the kernel waits on latency, on launches,
// or on an occupancy that its registers or shared memory cap.
#include <cstdint>
#include <limits>
#include <string>

namespace opprof {

struct BottleneckInput {
  static constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t kernels = 0;
  std::int64_t time_ns = 0;
  bool has_counters = false;
  // Percent of peak; NaN when the metric set lacks the counter.
  double sm_pct = kUnknown, memory_pct = kUnknown, dram_pct = kUnknown, tensor_pct = kUnknown, l1_pct = kUnknown,
         l2_pct = kUnknown, occupancy_pct = kUnknown, issue_pct = kUnknown;
  double fma_pct = kUnknown;  // FMA pipe (FP32 on the CUDA cores)
  // The occupancy, in % of the SM's warps, that the registers and the shared memory per block allow;
  // NaN when unknown.
  double register_cap_pct = kUnknown, shared_mem_cap_pct = kUnknown;
  // FLOPs by where they ran; negative when the metric set lacks their counters.
  double tensor_flops = -1, fp32_flops = -1;
  double spill_bytes = 0;
};

struct Bottleneck {
  std::string label;   // "dram-bound", "tensor-bound", "compute-bound", "l2-bound", "l1-bound", "occupancy-limited",
                       // "latency-bound", "launch-bound", "unmeasured"
  std::string reason;  // the figures that decided the class ("DRAM 91% of peak >= 60%")
  std::string advice;  // what to look at next
  std::string why;     // reason, every other figure, and the advice: what the database and reports show
};

// Thresholds, in percent of peak, and the mean duration under which a kernel is launch-bound.
inline constexpr double kLimiterPct = 60.0;
inline constexpr double kTensorPct = 50.0;
inline constexpr double kLowPct = 30.0;
inline constexpr double kLowOccupancyPct = 25.0;
// Achieved occupancy at this fraction of the cap means the cap, not the grid, sets the resident warps.
inline constexpr double kCapReachedFraction = 0.8;
inline constexpr std::int64_t kLaunchBoundMeanNs = 5000;
// Below this tensor-pipe activity, FP32 work on the CUDA cores gets the "use the tensor cores" hint.
inline constexpr double kTensorIdlePct = 10.0;

Bottleneck classify_bottleneck(const BottleneckInput& in);

}  // namespace opprof
