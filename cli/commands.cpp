#include "cli/commands.hpp"

#include <fmt/format.h>

#include "cli/attribute_command.hpp"
#include "cli/compare_command.hpp"
#include "cli/profile_command.hpp"
#include "cli/report_command.hpp"
#include "opprof/util/error.hpp"
#include "opprof/metrics/metric_set.hpp"

namespace opprof::cli {
namespace {

struct MetricsOptions {
  std::string file;
  std::string chip = "gh100";
  bool check = false;
};

int run_metrics(const MetricsOptions& o) {
  MetricSet set = load_metric_set(o.file).for_chip(o.chip);
  if (o.check) {
    MetricCatalog cat = builtin_metric_catalog(o.chip);
    if (cat.entries.empty()) {
      fmt::print(stderr, "opprof: no built-in ncu metric catalog for chip '{}'\n", o.chip);
      return 2;
    }
    auto problems = validate_metric_names(set, cat);
    for (const auto& p : problems) fmt::print(stderr, "{}\n", p);
    if (!problems.empty()) return 2;
    fmt::print("{} metrics of {} are valid for {}\n", set.metrics.size(), set.source, o.chip);
    return 0;
  }
  for (const auto& m : set.metrics)
    fmt::print("{:<72} {:<6} {:<24} {:<16} {:<10} {}\n", m.name, to_string(m.aggregate), m.weight.empty() ? "-" : m.weight,
               m.unit.empty() ? "-" : m.unit, m.axis, m.reason);
  return 0;
}

MetricsOptions g_metrics;
AttributeOptions g_attribute;
ProfileOptions g_profile;
ReportOptions g_report;
CompareOptions g_compare;

}  // namespace

void register_commands(CLI::App& app) {
  add_attribute_command(app, g_attribute);
  add_report_command(app, g_report);
  add_compare_command(app, g_compare);
  add_profile_command(app, g_profile);
  auto* metrics = app.add_subcommand("metrics", "List the ncu metric set (or check it against a chip's catalog)");
  metrics->add_option("--metrics", g_metrics.file, "Metric-set file (default: the built-in set)");
  metrics->add_option("--chip", g_metrics.chip, "ncu chip name (gh100, ga100, ...)")->capture_default_str();
  metrics->add_flag("--check", g_metrics.check, "Validate every name against the chip's ncu metric catalog");
}

int run_selected(CLI::App& app, const std::vector<std::string>& program) {
  if (app.got_subcommand("profile")) {
    g_profile.command = program;
    return run_profile(g_profile);
  }
  if (!program.empty()) throw InputError("opprof", "only `opprof profile` takes a program after --");
  if (app.got_subcommand("attribute")) return run_attribute(g_attribute);
  if (app.got_subcommand("report")) return run_report(g_report);
  if (app.got_subcommand("compare")) return run_compare(g_compare);
  if (app.got_subcommand("metrics")) return run_metrics(g_metrics);
  return 2;
}

}  // namespace opprof::cli
