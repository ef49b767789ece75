// `opprof metrics`: the ncu metric set as a chip collects it, or its check against the chip's catalog.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.hpp"
#include "opprof/pipeline/metric_set_check.hpp"

namespace opprof::cli {
namespace {

struct MetricsOptions {
  std::string file;
  std::string chip = "gh100";
  bool check = false;
};

int run_metrics(const MetricsOptions& o) {
  const MetricSetCheck c = check_metric_set(o.file, o.chip, o.check);
  if (!o.check) {
    for (const auto& m : c.set.metrics)
      fmt::print("{:<72} {:<6} {:<10} {}\n", m.name, to_string(m.aggregate), m.axis, m.reason);
    return 0;
  }
  if (!c.catalog_known) {
    fmt::print(stderr, "opprof: no built-in ncu metric catalog for chip '{}'\n", o.chip);
    return 2;
  }
  for (const auto& p : c.problems) fmt::print(stderr, "{}\n", p.to_string());
  if (!c.problems.empty()) return 2;
  fmt::print("{} metrics of {} are valid for {}\n", c.set.metrics.size(), c.set.source, o.chip);
  return 0;
}

}  // namespace

Command add_metrics_command(CLI::App& app) {
  auto o = std::make_shared<MetricsOptions>();
  auto* cmd = app.add_subcommand("metrics", "List the ncu metric set (or check it against a chip's catalog)");
  cmd->add_option("--metrics", o->file, "Metric-set file (default: the built-in set)");
  cmd->add_option("--chip", o->chip, "ncu chip name (gh100, ga100, ...)")->capture_default_str();
  cmd->add_flag("--check", o->check, "Validate every name against the chip's ncu metric catalog");
  return {cmd, [o](const std::vector<std::string>&) { return run_metrics(*o); }};
}

}  // namespace opprof::cli
