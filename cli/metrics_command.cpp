// `opprof metrics`: the ncu metric set as a chip collects it, or its check against the chip's catalog.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "opprof/pipeline/metric_set_check.hpp"
#include "opprof/report/metric_set_json.hpp"
#include "opprof/util/error.hpp"

namespace opprof::cli {
namespace {

struct MetricsOptions {
  std::string file;
  std::string chip = "gh100";
  std::string device_name;
  std::string compute_capability;  // "9.0"
  bool check = false;
  bool json = false;
};

int run_metrics(MetricsOptions o) {
  MetricSetQuery query;
  query.chip = o.chip;
  if (!o.device_name.empty() || !o.compute_capability.empty()) {
    int major = 0, minor = 0;
    if (!o.compute_capability.empty() && std::sscanf(o.compute_capability.c_str(), "%d.%d", &major, &minor) < 1)
      throw InputError("--compute-capability", "expected major.minor (9.0), got '" + o.compute_capability + "'");
    query.device_chip = chip_for_device(o.device_name, major, minor);
    query.chip = o.chip = query.device_chip.empty() ? "*" : query.device_chip;
  }
  if (o.json) {
    fmt::print("{}", render_metric_set_json(load_metric_set(o.file), query));
    return 0;
  }
  const MetricSetCheck c = check_metric_set(o.file, o.chip, o.check);
  if (!o.check) {
    for (const auto& m : c.set.metrics)
      fmt::print("{:<72} {:<6} {:<24} {:<16} {:<10} {}\n", m.name, to_string(m.aggregate), m.weight.empty() ? "-" : m.weight,
                 m.unit.empty() ? "-" : m.unit, m.axis, m.reason);
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
  cmd->add_option("--device-name", o->device_name,
                  "GPU name (\"NVIDIA H200\"): the chip is found from it and --compute-capability");
  cmd->add_option("--compute-capability", o->compute_capability, "major.minor (9.0), with --device-name");
  cmd->add_flag("--check", o->check, "Validate every name against the chip's ncu metric catalog");
  cmd->add_flag("--json", o->json,
                "The set as JSON: each metric's aggregate, axis, unit, reason and chips, and the catalog's problems");
  return {cmd, [o](const std::vector<std::string>&) { return run_metrics(*o); }};
}

}  // namespace opprof::cli
