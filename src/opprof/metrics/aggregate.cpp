#include "opprof/metrics/aggregate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "opprof/metrics/bottleneck.hpp"

namespace opprof {

const char* to_string(GroupBy g) {
  switch (g) {
    case GroupBy::kOperator: return "operator";
    case GroupBy::kModule: return "module";
    case GroupBy::kFamily: return "family";
  }
  return "operator";
}

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

KernelMetrics collect_kernel_metrics(const Timeline& tl, const NcuTable& ncu, const NcuMatch& match,
                                     const MetricSet& set) {
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
  km.values.assign(km.kernels * m, kNaN);
  for (std::size_t i = 0; i < km.kernels; ++i) {
    std::uint32_t row = match.ncu_row_for_kernel[i];
    if (row == kNoIndex) continue;
    for (std::size_t j = 0; j < m; ++j) km.values[i * m + j] = ncu.value(row, columns[j]);
  }
  return km;
}

namespace {

// Accumulates one group's figures kernel by kernel.
struct GroupAccumulator {
  GroupStats stats;
  std::vector<double> sum;     // per metric: sum of values, or of value * weight for wmean
  std::vector<double> weight;  // per metric: sum of weights (wmean) or count of values
  std::vector<double> maxv;
};

std::size_t metric_by_name(const KernelMetrics& km, std::string_view name) {
  for (std::size_t j = 0; j < km.metrics.size(); ++j)
    if (km.metrics[j].name == name) return j;
  return NcuTable::npos;
}

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
  auto get = [&](std::string_view name) {
    std::size_t j = metric_by_name(km, name);
    return j == NcuTable::npos ? kNaN : g.metric[j];
  };
  double rd = get("dram__bytes_read.sum"), wr = get("dram__bytes_write.sum");
  double dur = get("gpu__time_duration.sum");
  if (!std::isnan(rd) && !std::isnan(wr)) {
    g.dram_bytes = rd + wr;
    if (!std::isnan(dur) && dur > 0) g.dram_bandwidth_gbps = g.dram_bytes / dur;  // bytes per ns = GB/s
  }
  double ffma = get("sm__sass_thread_inst_executed_op_ffma_pred_on.sum");
  if (!std::isnan(ffma)) {
    double fadd = get("sm__sass_thread_inst_executed_op_fadd_pred_on.sum");
    double fmul = get("sm__sass_thread_inst_executed_op_fmul_pred_on.sum");
    g.flops = 2 * ffma + (std::isnan(fadd) ? 0 : fadd) + (std::isnan(fmul) ? 0 : fmul);
    if (g.dram_bytes > 0) g.arithmetic_intensity = g.flops / g.dram_bytes;
  }
  BottleneckInput in;
  in.kernels = g.kernels;
  in.time_ns = g.time_ns;
  in.has_counters = g.counted_time_ns > 0;
  in.sm_pct = get("sm__throughput.avg.pct_of_peak_sustained_elapsed");
  in.memory_pct = get("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
  in.dram_pct = get("dram__throughput.avg.pct_of_peak_sustained_elapsed");
  in.tensor_pct = get("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active");
  in.l1_pct = get("l1tex__throughput.avg.pct_of_peak_sustained_active");
  in.l2_pct = get("lts__throughput.avg.pct_of_peak_sustained_elapsed");
  in.occupancy_pct = get("sm__warps_active.avg.pct_of_peak_sustained_active");
  in.issue_pct = get("smsp__issue_active.avg.pct_of_peak_sustained_active");
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
  std::unordered_map<StrId, std::size_t> index;
  std::vector<GroupAccumulator> groups;
  for (std::size_t i = 0; i < k.size(); ++i) {
    if (k.kind[i] != ActivityKind::kKernel) continue;
    StrId key = by == GroupBy::kOperator ? attr.op[i] : by == GroupBy::kModule ? attr.module[i] : attr.family[i];
    auto [it, inserted] = index.emplace(key, groups.size());
    if (inserted) {
      GroupAccumulator acc;
      acc.stats.key = key == kNoString ? (by == GroupBy::kModule ? "[no module]" : "[unattributed]")
                                       : std::string(tl.str(key));
      if (by == GroupBy::kOperator) acc.stats.fused_ops = std::string(tl.str(attr.fused_ops[i]));
      acc.sum.assign(m, 0.0);
      acc.weight.assign(m, 0.0);
      acc.maxv.assign(m, -std::numeric_limits<double>::infinity());
      groups.push_back(std::move(acc));
    }
    GroupAccumulator& acc = groups[it->second];
    const std::int64_t dur = k.duration_ns(i);
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
          // Weight by the timeline duration: the share of real (unreplayed) time each kernel stands for.
          double w = double(std::max<std::int64_t>(dur, 1));
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
    if (counted) acc.stats.counted_time_ns += dur;
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
