// `opprof compare-attribution A.db B.db` (formerly `opprof compare`): whether two profiles of one workload (two capture backends, say) attribute
// their kernels alike (reads only the two databases).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "opprof/compare/compare_report.hpp"
#include "opprof/compare/profile_compare.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/error.hpp"

namespace opprof::cli {
namespace {

struct CompareOptions {
  std::string a, b;
  bool json = false;
  bool all_activity = false;
  int top = 10;
  bool has_min_agreement = false;
  double min_agreement = 0;  // percent of A's aligned kernel time
};

// Prints the comparison; 1 when operator agreement is below --min-agreement, else 0.
int run_compare(const CompareOptions& o) {
  if (o.has_min_agreement && !(o.min_agreement >= 0 && o.min_agreement <= 100))
    throw InputError("--min-agreement", fmt::format("{} is not a percentage from 0 to 100", o.min_agreement));
  const ProfileReader a(o.a);
  const ProfileReader b(o.b);
  opprof::CompareOptions options;
  options.all_activity = o.all_activity;
  options.top = static_cast<std::size_t>(std::max(0, o.top));
  const ProfileComparison c = compare_profiles(a, b, options);
  fmt::print("{}", o.json ? render_comparison_json(c) : render_comparison_text(c));
  std::fflush(stdout);
  if (o.has_min_agreement && !(c.op.pct >= o.min_agreement)) {
    if (std::isfinite(c.op.pct))
      fmt::print(stderr, "opprof: operator agreement {:.2f}% is below --min-agreement {}%\n", c.op.pct, o.min_agreement);
    else
      fmt::print(stderr, "opprof: operator agreement is unknown (no aligned kernel time): below --min-agreement {}%\n",
                 o.min_agreement);
    return 1;
  }
  return 0;
}

// The command's options and help, for its name and for the deprecated one.
CLI::App* add_compare_attribution(CLI::App& app, const std::string& name, CompareOptions& o) {
  auto* cmd = app.add_subcommand(name, "Check whether two profiles of one workload attribute their kernels alike");
  cmd->add_option("A", o.a, "Profile database A (the reference: agreement is weighted by its kernel times)")->required();
  cmd->add_option("B", o.b, "Profile database B")->required();
  cmd->add_flag("--json", o.json, "Print the comparison as JSON instead");
  cmd->add_flag("--all-activity", o.all_activity, "Also align and compare memcpy and memset, not only kernels");
  cmd->add_option("--top", o.top, "Disagreements to list (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option_function<double>(
         "--min-agreement",
         [&o](const double& pct) {
           o.min_agreement = pct;
           o.has_min_agreement = true;
         },
         "Exit 1 when operator agreement (percent of A's aligned kernel time) is below PCT")
      ->option_text("PCT");
  cmd->footer(
      "Kernels are taken in start order and aligned by their normalized name (never by timestamps); each aligned\n"
      "pair compares operator, top-level operator, module path and ncu row. For performance before and after,\n"
      "see `opprof diff`.\n"
      "Exit status: 0 done, 1 operator agreement below --min-agreement, 2 bad input.");
  return cmd;
}

}  // namespace

Command add_compare_command(CLI::App& app) {
  auto options = std::make_shared<CompareOptions>();
  add_compare_attribution(app, "compare-attribution", *options);
  return {app.get_subcommand("compare-attribution"),
          [options](const std::vector<std::string>&) { return run_compare(*options); }};
}

Command add_deprecated_compare_command(CLI::App& app) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* cmd = add_compare_attribution(app, "compare", *options);
  cmd->group("");  // not listed in --help
  return {cmd, [options](const std::vector<std::string>&) {
            fmt::print(stderr, "opprof: note: `opprof compare` is now `opprof compare-attribution` (it checks whether "
                               "two profiles attribute alike; `opprof diff` compares their performance)\n");
            return run_compare(*options);
          }};
}

}  // namespace opprof::cli
