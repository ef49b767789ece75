#pragma once
// A synthetic torch.profiler (Kineto) trace of realistic structure and formatting, for benchmarks and
// for trying opprof on traces larger than any capture at hand (synthetic_trace.cpp says what is in it).
#include <cstdint>
#include <string>

namespace opprof::bench {

struct SyntheticTraceOptions {
  std::uint64_t kernels = 1'000'000;  // GPU activities: kernels, memcpys and memsets
  std::string output;                 // .json, or .json.gz for gzip
  int threads = 1;                    // CPU threads, each running the model on its own stream(s)
  int streams = 1;                    // 2: copies and some elementwise work on a side stream
  int layers = 12;                    // transformer layers per step
  double compiled_fraction = 0.25;    // share of the other steps that run as one compiled graph
  double cuda_graph_fraction = 0.0;   // share of steps replayed as a CUDA graph (mode="reduce-overhead")
  bool python_functions = false;      // python_function frames around module calls (with_stack)
  std::uint64_t seed = 20240607;      // the same seed writes the same bytes
};

struct SyntheticTraceSummary {
  std::uint64_t bytes = 0;
  std::uint64_t events = 0;
  std::uint64_t kernels = 0;
  std::uint64_t ranges = 0;  // CPU-side ranges (operators, annotations, python frames)
};

// Writes the trace; throws std::runtime_error when the file cannot be written.
SyntheticTraceSummary write_synthetic_trace(const SyntheticTraceOptions& options);

}  // namespace opprof::bench
