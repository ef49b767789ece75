#pragma once
// Roofline ceilings of a GPU: its peak DRAM bandwidth and peak FLOP/s by kind of work, from the catalog
// data/gpu_ceilings.tsv (datasheet figures at the boost clock, dense), looked up by the device name CUDA
// reports.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opprof {

struct GpuCeilings {
  std::string device;       // as CUDA names it: "NVIDIA H200"
  double dram_gbps = 0;     // GB/s, 1 GB = 10^9 bytes
  // GFLOP/s; NaN where the GPU has no such unit (FP8 tensor cores before Hopper).
  double fp32_gflops = 0;   // FP32 on the CUDA cores
  double tf32_gflops = 0;   // TF32 tensor
  double bf16_gflops = 0;   // BF16/FP16 tensor
  double fp8_gflops = 0;    // FP8 tensor
  double fp64_gflops = 0;
  std::string source;       // where the figures come from
};

// Parses a catalog in the format of data/gpu_ceilings.tsv; throws InputError naming source:line:column.
std::vector<GpuCeilings> parse_gpu_ceilings(std::string_view text, const std::string& source);
// The built-in catalog's entry for a device name (exact match), or nullopt.
std::optional<GpuCeilings> builtin_gpu_ceilings(std::string_view device);

}  // namespace opprof
