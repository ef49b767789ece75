#pragma once
// Aggregation of matched ncu counters per operator, module and kernel family, derived figures, and a
// bottleneck class per group; and the coverage figures of an attribution.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "opprof/attribute/attribution.hpp"
#include "opprof/ingest/ncu_csv.hpp"
#include "opprof/match/ncu_match.hpp"
#include "opprof/metrics/metric_set.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

// Counters per timeline kernel: values[kernel * metrics.size() + m], NaN where the kernel has no ncu row
// or the row lacks the metric.
struct KernelMetrics {
  static constexpr std::size_t kByDuration = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t kNoWeight = kByDuration - 1;
  std::vector<MetricSpec> metrics;       // the metric set's metrics present in the CSV
  std::vector<std::string> missing;      // metric set entries the CSV lacks
  std::vector<std::string> units;        // per metric, from the CSV (the unit the set declares)
  // Per metric, what a wmean weighs each kernel's value by: the index of its weight metric in metrics,
  // kByDuration (timeline duration), or kNoWeight (sum and max; or a weight metric the CSV lacks, which
  // leaves the mean unknown rather than weighted by something else).
  std::vector<std::size_t> weight;
  std::vector<double> values;
  std::size_t kernels = 0;
  // Layer dedup (src/opprof/dedup): per kernel, the kernel whose ncu row its values were copied from
  // (kNoIndex where they are its own). Empty without dedup.
  std::vector<std::uint32_t> counters_from;
  double value(std::size_t kernel, std::size_t m) const { return values[kernel * metrics.size() + m]; }
};
// Throws InputError at the CSV's units row when a metric's unit is not the one the set declares.
KernelMetrics collect_kernel_metrics(const Timeline& tl, const NcuTable& ncu, const NcuMatch& match,
                                     const MetricSet& set);

// Floating-point work by where it runs.
enum class FlopKind : std::uint8_t { kTensor, kFp32, kFp16, kFp64 };
// The FLOP kind and FLOP per count of an ncu metric, or nullopt for a metric that counts no FLOPs.
std::optional<std::pair<FlopKind, double>> flop_counter(std::string_view metric);

enum class GroupBy : std::uint8_t { kOperator = 0, kModule = 1, kFamily = 2 };
inline constexpr std::array<const char*, 3> kGroupByNames = {"operator", "module", "family"};  // group_metrics.group_kind
static_assert(kGroupByNames.size() == static_cast<std::size_t>(GroupBy::kFamily) + 1);
inline const char* to_string(GroupBy g) { return enum_name(kGroupByNames, g); }

// The group of the kernels without a module path (GroupBy::kModule), and of those without an operator
// or family: not a module or operator, the unattributed remainder.
inline constexpr std::string_view kNoModuleKey = "[no module]";
inline constexpr std::string_view kUnattributedKey = "[unattributed]";

struct GroupStats {
  std::string key;                 // operator name, module path or kernel family
  std::string fused_ops;           // operators only: the ATen ops an Inductor kernel fuses
  std::uint64_t kernels = 0;       // kernel launches
  std::int64_t time_ns = 0;        // sum of timeline durations
  double time_share = 0;           // of all kernel time
  std::int64_t counted_time_ns = 0;  // timeline time of the kernels that have counters
  std::vector<double> metric;      // per KernelMetrics::metrics, aggregated; NaN when no counters
  double dram_bytes = -1;          // derived: read + write, -1 when unknown
  double dram_bandwidth_gbps = -1; // derived: DRAM bytes / ncu duration
  // Derived floating-point work (docs/bottlenecks.md lists the counters and their FLOP per count), each
  // -1 when the metric set has none of its counters. flops is the sum of the known kinds.
  double flops = -1;
  double tensor_flops = -1;        // on the tensor cores: FP16, BF16, TF32, FP8, FP64 inputs
  double fp32_flops = -1;          // FP32 on the CUDA cores: 2*FFMA + FADD + FMUL
  double fp16_flops = -1;          // FP16 on the CUDA cores: 4*HFMA2 + 2*HADD2 + 2*HMUL2
  double fp64_flops = -1;          // FP64 on the CUDA cores: 2*DFMA + DADD + DMUL
  double gflops = -1;              // achieved: flops / ncu duration, GFLOP/s (1e9 FLOP per second)
  double tensor_gflops = -1;       // tensor_flops / ncu duration
  double fp32_gflops = -1;         // fp32_flops / ncu duration
  double arithmetic_intensity = -1;  // flops / DRAM byte
  // Occupancy, % of the SM's warps, that the registers and the shared memory per block allow (timeline-
  // duration-weighted over the group's kernels); NaN when unknown.
  double register_occupancy_cap_pct = std::numeric_limits<double>::quiet_NaN();
  double shared_mem_occupancy_cap_pct = std::numeric_limits<double>::quiet_NaN();
  std::string bottleneck;          // class (see classify_bottleneck)
  std::string bottleneck_why;      // the figures that decided it, the others, and the advice
};

struct Aggregates {
  std::vector<GroupStats> operators;  // sorted by time, largest first
  std::vector<GroupStats> modules;
  std::vector<GroupStats> families;
};
Aggregates aggregate(const Timeline& tl, const AttributionTable& attr, const KernelMetrics& km);

struct UnattributedGroup {
  std::string family;
  std::string reason;
  std::uint64_t kernels = 0;
  std::int64_t time_ns = 0;
};

struct Coverage {
  std::int64_t kernel_time_ns = 0;          // kind kernel only
  std::uint64_t kernels = 0;
  std::int64_t attributed_ns = 0;           // kernel time with an operator
  std::int64_t module_attributed_ns = 0;    // kernel time with a module path
  std::int64_t opaque_ns = 0;               // kernel time inside opaque library backends
  std::int64_t by_path_ns[4] = {0, 0, 0, 0};  // indexed by AttributionPath
  std::vector<UnattributedGroup> unattributed;  // by family and reason, largest first
  std::vector<std::pair<std::string, std::int64_t>> opaque_backends;  // backend -> time
  // ncu matching
  bool has_ncu = false;
  std::size_t ncu_rows = 0, ncu_matched = 0, ncu_unmatched_rows = 0, ncu_unmatched_kernels = 0;
  std::size_t ncu_grid_block_disagreements = 0;
  std::size_t ncu_launch_config_differs = 0;  // rows paired with a kernel of another launch configuration
  bool ncu_strict_launch_config = false;      // ... and refused for it
  std::int64_t by_phase_ns[kPhases] = {};  // indexed by Phase

  double pct(std::int64_t ns) const { return kernel_time_ns > 0 ? 100.0 * double(ns) / double(kernel_time_ns) : 0.0; }
};
Coverage compute_coverage(const Timeline& tl, const AttributionTable& attr, const NcuMatch* match,
                          std::size_t ncu_rows);

}  // namespace opprof
