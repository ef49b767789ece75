#pragma once
// A synthetic opprof tracer log (agents/tracer_log/format.hpp) of the shape the tracer writes for an eager
// training loop under the torch observer: per step, module ranges (user scope) around operator ranges
// (the observer's domain) that each launch one kernel through cudaLaunchKernel, and the kernel records,
// which CUPTI delivers in buffers after the API calls.
#include <cstdint>
#include <string>

namespace opprof::bench {

struct SyntheticTracerLogSummary {
  std::uint64_t bytes = 0;
  std::uint64_t records = 0;
  std::uint64_t kernels = 0;
};

// Writes a log of `kernels` kernels to path; throws std::runtime_error when it cannot be written.
SyntheticTracerLogSummary write_synthetic_tracer_log(std::uint64_t kernels, const std::string& path);

}  // namespace opprof::bench
