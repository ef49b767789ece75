#include "cli/commands.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "cli/attribute_command.hpp"
#include "cli/compare_command.hpp"
#include "cli/doctor_command.hpp"
#include "cli/profile_command.hpp"
#include "cli/report_command.hpp"
#include "opprof/util/error.hpp"
#include "opprof/metrics/metric_set.hpp"
#include "opprof/report/metric_set_json.hpp"

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

int run_metrics(const MetricsOptions& o) {
  MetricSetQuery query;
  query.chip = o.chip;
  if (!o.device_name.empty() || !o.compute_capability.empty()) {
    int major = 0, minor = 0;
    if (!o.compute_capability.empty() && std::sscanf(o.compute_capability.c_str(), "%d.%d", &major, &minor) < 1)
      throw InputError("--compute-capability", "expected major.minor (9.0), got '" + o.compute_capability + "'");
    query.device_chip = chip_for_device(o.device_name, major, minor);
    query.chip = query.device_chip.empty() ? "*" : query.device_chip;
  }
  const MetricSet file_set = load_metric_set(o.file);
  if (o.json) {
    fmt::print("{}", render_metric_set_json(file_set, query));
    return 0;
  }
  MetricSet set = file_set.for_chip(query.chip);
  if (o.check) {
    MetricCatalog cat = builtin_metric_catalog(query.chip);
    if (cat.entries.empty()) {
      fmt::print(stderr, "opprof: no built-in ncu metric catalog for chip '{}'\n", query.chip);
      return 2;
    }
    auto problems = validate_metric_names(set, cat);
    for (const auto& p : problems) fmt::print(stderr, "{}\n", p);
    if (!problems.empty()) return 2;
    fmt::print("{} metrics of {} are valid for {}\n", set.metrics.size(), set.source, query.chip);
    return 0;
  }
  for (const auto& m : set.metrics)
    fmt::print("{:<72} {:<6} {:<10} {}\n", m.name, to_string(m.aggregate), m.axis, m.reason);
  return 0;
}

MetricsOptions g_metrics;
AttributeOptions g_attribute;
ProfileOptions g_profile;
ReportOptions g_report;
CompareOptions g_compare;
DoctorCommandOptions g_doctor;

}  // namespace

void register_commands(CLI::App& app) {
  add_attribute_command(app, g_attribute);
  add_report_command(app, g_report);
  add_compare_command(app, g_compare);
  add_profile_command(app, g_profile);
  add_doctor_command(app, g_doctor);
  auto* metrics = app.add_subcommand("metrics", "List the ncu metric set (or check it against a chip's catalog)");
  metrics->add_option("--metrics", g_metrics.file, "Metric-set file (default: the built-in set)");
  metrics->add_option("--chip", g_metrics.chip, "ncu chip name (gh100, ga100, ...)")->capture_default_str();
  metrics->add_option("--device-name", g_metrics.device_name,
                      "GPU name (\"NVIDIA H200\"): the chip is found from it and --compute-capability");
  metrics->add_option("--compute-capability", g_metrics.compute_capability, "major.minor (9.0), with --device-name");
  metrics->add_flag("--check", g_metrics.check, "Validate every name against the chip's ncu metric catalog");
  metrics->add_flag("--json", g_metrics.json,
                    "The set as JSON: each metric's aggregate, axis, unit, reason and chips, and the catalog's problems");
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
  if (app.got_subcommand("doctor")) return run_doctor_command(g_doctor);
  return 2;
}

}  // namespace opprof::cli
