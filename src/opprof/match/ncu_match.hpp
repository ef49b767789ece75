#pragma once
// Matches ncu's replayed kernels to timeline kernels by invocation order within a kernel identity.
// Never by timestamps (ncu runs in another process and clock) and never by substring.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "opprof/anomaly/anomalies.hpp"
#include "opprof/ingest/ncu_csv.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

// The base function name of a kernel: its qualified name without return type, template arguments and
// parameter list, from any of the three spellings that reach us: a mangled name (_Z..., demangled first),
// torch.profiler's demangling and ncu's demangling. "(anonymous namespace)" and ncu's "<unnamed>" are both
// spelled "(anonymous namespace)"; ncu's "operator ()" is spelled "operator()".
//   "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)" -> "cutlass::Kernel2"
//   "void at::<unnamed>::distribution_elementwise_grid_stride_kernel<...>(long, ...)"
//       -> "at::(anonymous namespace)::distribution_elementwise_grid_stride_kernel"
//   "triton_poi_fused_add_0" -> "triton_poi_fused_add_0"
// ncu's demangler drops some enclosing namespaces (samples/h200: torch.profiler's
// "cublasLt::epilogue::impl::globalKernel" is ncu's "cublasLt::globalKernel", "at::native::X" is "at::X"),
// so the qualified base name is for display; identities compare kernel_match_name.
std::string kernel_base_name(std::string_view name);

// The last component of kernel_base_name ("globalKernel", "vectorized_elementwise_kernel"): the part of a
// kernel's name that all three spellings agree on. Matching compares it together with grid and block.
std::string kernel_match_name(std::string_view name);

struct KernelIdentity {
  std::string base_name;  // kernel_match_name of the kernel's name
  Dim3 grid;
  Dim3 block;
  bool operator==(const KernelIdentity&) const = default;
};

struct NcuMatch {
  // Parallel to Timeline::kernels: the matched ncu row, kNoIndex when none (memcpy/memset are never matched).
  std::vector<std::uint32_t> ncu_row_for_kernel;
  // Parallel to NcuTable rows: the matched timeline kernel, kNoIndex when none.
  std::vector<std::uint32_t> kernel_for_ncu_row;
  std::size_t matched = 0;
  std::vector<std::uint32_t> unmatched_rows;     // ncu rows without a kernel
  std::vector<std::uint32_t> unmatched_kernels;  // timeline kernels (kind kernel) without a row
  std::size_t grid_block_disagreements = 0;      // pairs of one identity whose grid or block differ (should be 0)
  // Parallel to NcuTable rows: the timeline kernel of the same name that the row pairs with in invocation
  // order although its grid or block differs (an autotuned kernel compiled separately in the two runs),
  // kNoIndex for rows paired by full identity or not at all. Under strict_launch_config such a row stays
  // unmatched and this names the kernel it was refused.
  std::vector<std::uint32_t> launch_config_kernel_for_ncu_row;
  std::size_t launch_config_differs = 0;  // rows with a launch_config_kernel_for_ncu_row
  bool strict_launch_config = false;      // those pairs were refused, not matched
  bool used_mangled_names = false;               // identity compared exact mangled names on both sides
  std::vector<std::string> notes;                // how divergences were aligned, one line each
};

struct NcuMatchOptions {
  // Refuse pairs whose launch configuration differs: leave both sides unmatched (and reported).
  bool strict_launch_config = false;
  // Parallel to Timeline::kernels when given: 1 for the kernels pass B replayed (a dedup plan's replay set,
  // src/opprof/dedup). The others take no part in matching and are not reported unmatched: their counters
  // are propagated from a representative afterwards.
  const std::vector<std::uint8_t>* replayed = nullptr;
};

// Timeline kernels (kind kernel), per process in the order ncu replays them (launch order, as match_ncu
// takes them); processes in order of their first launch.
std::vector<std::vector<std::uint32_t>> kernels_in_launch_order(const Timeline& timeline);

// Timeline kernels are taken in launch order (the launch's CPU timestamp, else the kernel's start),
// per process. Where the two identity sequences diverge they are aligned (longest common subsequence
// by Myers' diff) and every row and kernel left over is reported. Throws InputError when the CSV
// cannot belong to this capture (fewer than half of the timeline kernels and fewer than half of the
// ncu rows match).
// Where the full identities leave a stretch unmatched on both sides between the same matched neighbours,
// the stretch is aligned again by kernel name alone: a kernel whose grid or block differ between the two
// runs (Inductor autotuned it separately in each) pairs with its counterpart in invocation order, flagged in
// launch_config_kernel_for_ncu_row and counted in launch_config_differs. Records in anomalies, when given,
// where identities compared names alone and where a process pair was paired by occurrence.
NcuMatch match_ncu(const Timeline& timeline, const NcuTable& ncu, const NcuMatchOptions& options = {},
                   Anomalies* anomalies = nullptr);

}  // namespace opprof
