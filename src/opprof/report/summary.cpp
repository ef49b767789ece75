#include "opprof/report/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "opprof/util/text.hpp"

namespace opprof {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Which metric of the profile stands for a key counter: the named one when the profile has it, else the
// first percentage on the same bottleneck axis (a chip-specific metric set may replace the name, as
// Blackwell's tensor metrics replace HMMA's).
std::size_t find_key_metric(const ProfileReader& profile, std::string_view name, std::string_view axis) {
  std::size_t exact = profile.metric_index(name);
  const auto& metrics = profile.metrics();
  if (exact != ProfileReader::npos && metrics[exact].present) return exact;
  for (std::size_t i = 0; i < metrics.size(); ++i)
    if (metrics[i].present && metrics[i].axis == axis && metrics[i].unit == "%") return i;
  return ProfileReader::npos;
}

struct KeyMetricIndex {
  std::size_t sm, dram, tensor, occupancy;
};

double metric_or_nan(const GroupStats& g, std::size_t index) {
  return index < g.metric.size() ? g.metric[index] : kNaN;
}

std::vector<GroupLine> group_lines(std::vector<GroupStats> groups, const KeyMetricIndex& keys,
                                   std::int64_t kernel_time_ns) {
  std::vector<GroupLine> out;
  for (GroupStats& g : groups) {
    GroupLine line;
    line.time_pct = kernel_time_ns > 0 ? 100.0 * static_cast<double>(g.time_ns) / static_cast<double>(kernel_time_ns)
                                       : 0.0;
    line.counters = {metric_or_nan(g, keys.sm), metric_or_nan(g, keys.dram), metric_or_nan(g, keys.tensor),
                     metric_or_nan(g, keys.occupancy)};
    line.stats = std::move(g);
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace

bool metadata_says_false(std::string_view value) {
  std::string v(trim(value));
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return v == "false" || v == "0" || v == "no" || v == "off";
}

ReportSummary summarize_profile(const ProfileReader& profile, const ReportOptions& options) {
  ReportSummary s;
  s.path = profile.path();
  s.schema_version = profile.schema_version();
  s.metadata = profile.metadata();
  s.coverage = profile.coverage();
  const Coverage& c = s.coverage;

  KeyMetricIndex keys{
      find_key_metric(profile, "sm__throughput.avg.pct_of_peak_sustained_elapsed", "compute"),
      find_key_metric(profile, "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram"),
      find_key_metric(profile, "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor"),
      find_key_metric(profile, "sm__warps_active.avg.pct_of_peak_sustained_active", "occupancy")};
  s.operators = group_lines(profile.groups(GroupBy::kOperator, options.top), keys, c.kernel_time_ns);
  std::vector<GroupStats> modules = profile.groups(GroupBy::kModule);
  s.module_tree = build_module_tree(modules);
  if (options.top > 0 && modules.size() > options.top) modules.resize(options.top);
  s.modules = group_lines(std::move(modules), keys, c.kernel_time_ns);
  s.families = group_lines(profile.groups(GroupBy::kFamily, options.top), keys, c.kernel_time_ns);
  s.operator_count = profile.group_count(GroupBy::kOperator);
  s.module_count = profile.group_count(GroupBy::kModule);
  for (const ProfileMetric& m : profile.metrics())
    if (!m.present) s.missing_metrics.push_back(m.name);
  s.match_notes = profile.match_notes();
  s.anomalies = profile.anomalies();

  // Warnings: facts that change how far the numbers can be trusted.
  if (c.kernels == 0) s.warnings.push_back("The profile has no kernels: was the capture window empty?");
  // What attribution warned about while it wrote the profile (an Inductor directory that does not fit, ...).
  for (const auto& [key, value] : s.metadata)
    if (starts_with(key, "warning.")) s.warnings.push_back(value);
  for (const char* key : {"clocks_locked", "timeline.clocks_locked"}) {
    auto it = s.metadata.find(key);
    if (it != s.metadata.end() && metadata_says_false(it->second)) {
      s.warnings.push_back(
          "GPU clocks were not locked during the capture: kernel times move with boost clock and temperature, "
          "so compare two profiles with care.");
      break;
    }
  }
  if (auto it = s.metadata.find("ncu.clock_control"); it != s.metadata.end() && trim(it->second) == "none")
    s.warnings.push_back(
        "ncu replayed with --clock-control none: its counters were taken at unlocked clocks, and percentages of "
        "peak vary between runs.");
  if (c.has_ncu) {
    if (c.ncu_grid_block_disagreements > 0)
      s.warnings.push_back(fmt::format(
          "{} matched ncu row(s) disagree with their kernel's grid or block: the ncu CSV may come from another run.",
          c.ncu_grid_block_disagreements));
    if (c.ncu_launch_config_differs > 0)
      s.warnings.push_back(
          c.ncu_strict_launch_config
              ? fmt::format("{} ncu row(s) pair with a kernel of the same name whose grid or block differ; "
                            "--strict-launch-config left them unmatched.",
                            c.ncu_launch_config_differs)
              : fmt::format("{} ncu row(s) matched a kernel whose grid or block differ: their counters come from "
                            "another launch configuration of the same kernel (autotuned separately in the two "
                            "runs?); --strict-launch-config refuses such pairs.",
                            c.ncu_launch_config_differs));
    if (c.ncu_unmatched_rows > 0)
      s.warnings.push_back(fmt::format("{} ncu row(s) matched no timeline kernel; see the match notes.",
                                       c.ncu_unmatched_rows));
    if (!s.missing_metrics.empty())
      s.warnings.push_back(fmt::format("The ncu CSV lacks {} metric(s) of the metric set: {}.",
                                       s.missing_metrics.size(), join(s.missing_metrics, ", ")));
  }
  return s;
}

}  // namespace opprof
