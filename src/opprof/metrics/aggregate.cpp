#include "opprof/metrics/aggregate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include "opprof/metrics/bottleneck.hpp"
#include "opprof/util/text.hpp"

namespace opprof {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

KernelMetrics collect_kernel_metrics(const Timeline& tl, const NcuTable& ncu, const NcuMatch& match,
                                     const MetricSet& set) {
  std::vector<DeclaredUnit> declared;
  declared.reserve(set.metrics.size());
  for (const auto& spec : set.metrics) declared.push_back({spec.name, spec.unit, set.source, spec.line});
  check_ncu_units(ncu, declared);

  KernelMetrics km;
  km.kernels = tl.kernels.size();
  std::vector<std::size_t> columns;
  for (const auto& spec : set.metrics) {
    std::size_t col = ncu.metric_index(spec.name);
    if (col == NcuTable::npos) {
      km.missing.push_back(spec.name);
      continue;
    }
    km.metrics.push_back(spec);
    km.units.push_back(ncu.metric_units[col]);
    columns.push_back(col);
  }
  const std::size_t m = km.metrics.size();
  km.weight.assign(m, KernelMetrics::kNoWeight);
  for (std::size_t j = 0; j < m; ++j) {
    const MetricSpec& spec = km.metrics[j];
    if (spec.aggregate != Aggregate::kWeightedMean) continue;
    if (spec.weight == kDurationWeight) {
      km.weight[j] = KernelMetrics::kByDuration;
      continue;
    }
    for (std::size_t w = 0; w < m; ++w)
      if (km.metrics[w].name == spec.weight) km.weight[j] = w;
  }
  km.values.assign(km.kernels * m, kNaN);
  for (std::size_t i = 0; i < km.kernels; ++i) {
    std::uint32_t row = match.ncu_row_for_kernel[i];
    if (row == kNoIndex) continue;
    for (std::size_t j = 0; j < m; ++j) km.values[i * m + j] = ncu.value(row, columns[j]);
  }
  return km;
}

namespace {

std::size_t metric_by_name(const KernelMetrics& km, std::string_view name) {
  for (std::size_t j = 0; j < km.metrics.size(); ++j)
    if (km.metrics[j].name == name) return j;
  return NcuTable::npos;
}

// Floating-point work by where it runs. CUDA-core counters count thread instructions; the tensor path
// counters count operations already (an FMA is 2).
struct FlopCounter {
  std::string_view metric;
  FlopKind kind;
  double flops_per_count;
};
constexpr FlopCounter kCudaCoreFlopCounters[] = {
    {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum", FlopKind::kFp32, 2},
    {"sm__sass_thread_inst_executed_op_fadd_pred_on.sum", FlopKind::kFp32, 1},
    {"sm__sass_thread_inst_executed_op_fmul_pred_on.sum", FlopKind::kFp32, 1},
    // Packed half2 instructions: two lanes each (ncu's own derived hfma_pred_on_x4).
    {"sm__sass_thread_inst_executed_op_hfma_pred_on.sum", FlopKind::kFp16, 4},
    {"sm__sass_thread_inst_executed_op_hadd_pred_on.sum", FlopKind::kFp16, 2},
    {"sm__sass_thread_inst_executed_op_hmul_pred_on.sum", FlopKind::kFp16, 2},
    {"sm__sass_thread_inst_executed_op_dfma_pred_on.sum", FlopKind::kFp64, 2},
    {"sm__sass_thread_inst_executed_op_dadd_pred_on.sum", FlopKind::kFp64, 1},
    {"sm__sass_thread_inst_executed_op_dmul_pred_on.sum", FlopKind::kFp64, 1},
};

}  // namespace

// Tensor path counters go by their name so that every chip's spelling counts:
// sm__ops_path_tensor_src_<type>...sum, except integer types and the _op_<instruction>_ and _sparsity_
// splits of the same operations.
std::optional<std::pair<FlopKind, double>> flop_counter(std::string_view name) {
  for (const FlopCounter& c : kCudaCoreFlopCounters)
    if (name == c.metric) return std::pair{c.kind, c.flops_per_count};
  constexpr std::string_view kTensorPath = "sm__ops_path_tensor_src_";
  if (starts_with(name, kTensorPath) && ends_with(name, ".sum") && !contains(name, "_int") &&
      !contains(name, "_sparsity_"))
    return std::pair{FlopKind::kTensor, 1.0};
  return std::nullopt;
}

namespace {

// Indices of the per-kernel launch figures that give the occupancy registers and shared memory allow.
struct OccupancyColumns {
  std::size_t registers = NcuTable::npos, shared_mem = NcuTable::npos, block_size = NcuTable::npos,
              max_warps = NcuTable::npos;
  explicit OccupancyColumns(const KernelMetrics& km)
      : registers(metric_by_name(km, "launch__occupancy_limit_registers")),
        shared_mem(metric_by_name(km, "launch__occupancy_limit_shared_mem")),
        block_size(metric_by_name(km, "launch__block_size")),
        max_warps(metric_by_name(km, "device__attribute_max_warps_per_multiprocessor")) {}
  // % of the SM's warps that `limit` blocks per SM hold, NaN when a figure is missing.
  double cap_pct(const KernelMetrics& km, std::size_t kernel, std::size_t limit) const {
    if (limit == NcuTable::npos || block_size == NcuTable::npos || max_warps == NcuTable::npos) return kNaN;
    const double blocks = km.value(kernel, limit), threads = km.value(kernel, block_size),
                 warps = km.value(kernel, max_warps);
    if (std::isnan(blocks) || std::isnan(threads) || !(warps > 0)) return kNaN;
    return std::min(100.0, 100.0 * blocks * std::ceil(threads / 32.0) / warps);
  }
};

// Accumulates one group's figures kernel by kernel.
struct GroupAccumulator {
  GroupStats stats;
  std::vector<double> sum;     // per metric: sum of values, or of value * weight for wmean
  std::vector<double> weight;  // per metric: sum of weights (wmean) or count of values
  std::vector<double> maxv;
  // Timeline-duration-weighted occupancy caps.
  double register_cap = 0, register_cap_ns = 0, shared_mem_cap = 0, shared_mem_cap_ns = 0;
};

void finish(GroupAccumulator& acc, const KernelMetrics& km, std::int64_t total_ns) {
  GroupStats& g = acc.stats;
  g.time_share = total_ns > 0 ? double(g.time_ns) / double(total_ns) : 0.0;
  g.metric.assign(km.metrics.size(), kNaN);
  for (std::size_t j = 0; j < km.metrics.size(); ++j) {
    if (acc.weight[j] <= 0) continue;
    switch (km.metrics[j].aggregate) {
      case Aggregate::kSum: g.metric[j] = acc.sum[j]; break;
      case Aggregate::kWeightedMean: g.metric[j] = acc.sum[j] / acc.weight[j]; break;
      case Aggregate::kMax: g.metric[j] = acc.maxv[j]; break;
    }
  }
  if (acc.register_cap_ns > 0) g.register_occupancy_cap_pct = acc.register_cap / acc.register_cap_ns;
  if (acc.shared_mem_cap_ns > 0) g.shared_mem_occupancy_cap_pct = acc.shared_mem_cap / acc.shared_mem_cap_ns;
  auto get = [&](std::string_view name) {
    std::size_t j = metric_by_name(km, name);
    return j == NcuTable::npos ? kNaN : g.metric[j];
  };
  double rd = get("dram__bytes_read.sum"), wr = get("dram__bytes_write.sum");
  double dur = get("gpu__time_duration.sum");
  const bool have_duration = !std::isnan(dur) && dur > 0;
  if (!std::isnan(rd) && !std::isnan(wr)) {
    g.dram_bytes = rd + wr;
    if (have_duration) g.dram_bandwidth_gbps = g.dram_bytes / dur;  // bytes per ns = GB/s
  }
  // FLOPs by kind: a kind is known when the group has a value of one of its counters.
  double kind_flops[4] = {-1, -1, -1, -1};
  for (std::size_t j = 0; j < km.metrics.size(); ++j) {
    auto counter = flop_counter(km.metrics[j].name);
    if (!counter || std::isnan(g.metric[j])) continue;
    double& f = kind_flops[static_cast<int>(counter->first)];
    f = std::max(f, 0.0) + counter->second * g.metric[j];
  }
  g.tensor_flops = kind_flops[static_cast<int>(FlopKind::kTensor)];
  g.fp32_flops = kind_flops[static_cast<int>(FlopKind::kFp32)];
  g.fp16_flops = kind_flops[static_cast<int>(FlopKind::kFp16)];
  g.fp64_flops = kind_flops[static_cast<int>(FlopKind::kFp64)];
  for (double f : kind_flops)
    if (f >= 0) g.flops = std::max(g.flops, 0.0) + f;
  if (have_duration) {
    // FLOP per ns = GFLOP/s.
    if (g.flops >= 0) g.gflops = g.flops / dur;
    if (g.tensor_flops >= 0) g.tensor_gflops = g.tensor_flops / dur;
    if (g.fp32_flops >= 0) g.fp32_gflops = g.fp32_flops / dur;
  }
  if (g.flops >= 0 && g.dram_bytes > 0) g.arithmetic_intensity = g.flops / g.dram_bytes;

  BottleneckInput in;
  in.kernels = g.kernels;
  in.time_ns = g.time_ns;
  in.has_counters = g.counted_time_ns > 0;
  in.sm_pct = get("sm__throughput.avg.pct_of_peak_sustained_elapsed");
  in.memory_pct = get("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
  in.dram_pct = get("dram__throughput.avg.pct_of_peak_sustained_elapsed");
  in.tensor_pct = get("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active");
  in.fma_pct = get("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active");
  in.l1_pct = get("l1tex__throughput.avg.pct_of_peak_sustained_active");
  in.l2_pct = get("lts__throughput.avg.pct_of_peak_sustained_elapsed");
  in.occupancy_pct = get("sm__warps_active.avg.pct_of_peak_sustained_active");
  in.issue_pct = get("smsp__issue_active.avg.pct_of_peak_sustained_active");
  in.register_cap_pct = g.register_occupancy_cap_pct;
  in.shared_mem_cap_pct = g.shared_mem_occupancy_cap_pct;
  in.tensor_flops = g.tensor_flops;
  in.fp32_flops = g.fp32_flops;
  double ld = get("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"), st = get("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum");
  in.spill_bytes = (std::isnan(ld) ? 0 : ld) + (std::isnan(st) ? 0 : st);
  Bottleneck b = classify_bottleneck(in);
  g.bottleneck = b.label;
  g.bottleneck_why = b.why;
}

std::vector<GroupStats> group(const Timeline& tl, const AttributionTable& attr, const KernelMetrics& km, GroupBy by,
                              std::int64_t total_ns) {
  const KernelTable& k = tl.kernels;
  const std::size_t m = km.metrics.size();
  const OccupancyColumns occupancy(km);
  std::unordered_map<StrId, std::size_t> index;
  std::vector<GroupAccumulator> groups;
  for (std::size_t i = 0; i < k.size(); ++i) {
    if (k.kind[i] != ActivityKind::kKernel) continue;
    StrId key = by == GroupBy::kOperator ? attr.op[i] : by == GroupBy::kModule ? attr.module[i] : attr.family[i];
    auto [it, inserted] = index.emplace(key, groups.size());
    if (inserted) {
      GroupAccumulator acc;
      acc.stats.key = std::string(key == kNoString ? (by == GroupBy::kModule ? kNoModuleKey : kUnattributedKey)
                                                   : tl.str(key));
      if (by == GroupBy::kOperator) acc.stats.fused_ops = std::string(tl.str(attr.fused_ops[i]));
      acc.sum.assign(m, 0.0);
      acc.weight.assign(m, 0.0);
      acc.maxv.assign(m, -std::numeric_limits<double>::infinity());
      groups.push_back(std::move(acc));
    }
    GroupAccumulator& acc = groups[it->second];
    const std::int64_t dur = k.duration_ns(i);
    // The share of real (unreplayed) time each kernel stands for.
    const double time_weight = double(std::max<std::int64_t>(dur, 1));
    acc.stats.kernels += 1;
    acc.stats.time_ns += dur;
    bool counted = false;
    for (std::size_t j = 0; j < m; ++j) {
      double v = km.values.empty() ? kNaN : km.value(i, j);
      if (std::isnan(v)) continue;
      counted = true;
      switch (km.metrics[j].aggregate) {
        case Aggregate::kSum:
          acc.sum[j] += v;
          acc.weight[j] += 1;
          break;
        case Aggregate::kWeightedMean: {
          // By duration, or by the ratio's own denominator (sectors, instructions): then the group's mean
          // is the group's ratio, not a mix of its kernels' ratios.
          const std::size_t wj = km.weight.empty() ? KernelMetrics::kByDuration : km.weight[j];
          if (wj == KernelMetrics::kNoWeight) break;
          const double w = wj == KernelMetrics::kByDuration ? time_weight : km.value(i, wj);
          if (!(w > 0)) break;  // no lookups, no instructions: the kernel says nothing about the ratio
          acc.sum[j] += v * w;
          acc.weight[j] += w;
          break;
        }
        case Aggregate::kMax:
          acc.maxv[j] = std::max(acc.maxv[j], v);
          acc.weight[j] += 1;
          break;
      }
    }
    if (counted) {
      acc.stats.counted_time_ns += dur;
      if (double cap = occupancy.cap_pct(km, i, occupancy.registers); !std::isnan(cap)) {
        acc.register_cap += cap * time_weight;
        acc.register_cap_ns += time_weight;
      }
      if (double cap = occupancy.cap_pct(km, i, occupancy.shared_mem); !std::isnan(cap)) {
        acc.shared_mem_cap += cap * time_weight;
        acc.shared_mem_cap_ns += time_weight;
      }
    }
  }
  std::vector<GroupStats> out;
  out.reserve(groups.size());
  for (auto& acc : groups) {
    finish(acc, km, total_ns);
    out.push_back(std::move(acc.stats));
  }
  std::sort(out.begin(), out.end(), [](const GroupStats& x, const GroupStats& y) {
    return x.time_ns != y.time_ns ? x.time_ns > y.time_ns : x.key < y.key;
  });
  return out;
}

}  // namespace

Aggregates aggregate(const Timeline& tl, const AttributionTable& attr, const KernelMetrics& km) {
  std::int64_t total = 0;
  for (std::size_t i = 0; i < tl.kernels.size(); ++i)
    if (tl.kernels.kind[i] == ActivityKind::kKernel) total += tl.kernels.duration_ns(i);
  Aggregates out;
  out.operators = group(tl, attr, km, GroupBy::kOperator, total);
  out.modules = group(tl, attr, km, GroupBy::kModule, total);
  out.families = group(tl, attr, km, GroupBy::kFamily, total);
  return out;
}

Coverage compute_coverage(const Timeline& tl, const AttributionTable& attr, const NcuMatch* match,
                          std::size_t ncu_rows) {
  Coverage c;
  const KernelTable& k = tl.kernels;
  std::map<std::pair<StrId, StrId>, UnattributedGroup> unattributed;
  std::map<StrId, std::int64_t> opaque;
  for (std::size_t i = 0; i < k.size(); ++i) {
    if (k.kind[i] != ActivityKind::kKernel) continue;
    const std::int64_t d = k.duration_ns(i);
    c.kernels += 1;
    c.kernel_time_ns += d;
    c.by_path_ns[static_cast<int>(attr.path[i])] += d;
    c.by_phase_ns[static_cast<int>(attr.phase[i])] += d;
    if (attr.path[i] != AttributionPath::kNone) {
      c.attributed_ns += d;
    } else {
      auto& g = unattributed[{attr.family[i], attr.reason[i]}];
      if (g.kernels == 0) {
        g.family = std::string(tl.str(attr.family[i]));
        g.reason = std::string(tl.str(attr.reason[i]));
      }
      g.kernels += 1;
      g.time_ns += d;
    }
    if (attr.module[i] != kNoString) c.module_attributed_ns += d;
    if (attr.opaque[i]) {
      c.opaque_ns += d;
      opaque[attr.opaque_backend[i]] += d;
    }
  }
  for (auto& [key, g] : unattributed) c.unattributed.push_back(std::move(g));
  std::sort(c.unattributed.begin(), c.unattributed.end(),
            [](const UnattributedGroup& x, const UnattributedGroup& y) { return x.time_ns > y.time_ns; });
  for (auto& [backend, ns] : opaque) c.opaque_backends.emplace_back(std::string(tl.str(backend)), ns);
  std::sort(c.opaque_backends.begin(), c.opaque_backends.end(),
            [](const auto& x, const auto& y) { return x.second > y.second; });
  if (match) {
    c.has_ncu = true;
    c.ncu_rows = ncu_rows;
    c.ncu_matched = match->matched;
    c.ncu_unmatched_rows = match->unmatched_rows.size();
    c.ncu_unmatched_kernels = match->unmatched_kernels.size();
    c.ncu_grid_block_disagreements = match->grid_block_disagreements;
    c.ncu_launch_config_differs = match->launch_config_differs;
    c.ncu_strict_launch_config = match->strict_launch_config;
  }
  return c;
}

}  // namespace opprof
