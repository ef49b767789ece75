// `opprof diff base.db new.db`: how kernel time changed between two profiles (reads only the databases).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "opprof/report/diff_report.hpp"
#include "opprof/report/text_table.hpp"
#include "opprof/util/error.hpp"

namespace opprof::cli {
namespace {

struct DiffCommandOptions {
  std::string base, next;
  bool json = false;
  int top = 15;
  int depth = 3;
  std::size_t width = 0;  // 0: the terminal's, or 100
  std::string color = "auto";
  bool has_fail_if_slower = false;
  double fail_if_slower = 0;  // percent of the base's kernel time
};

// Prints the diff; 1 when the new profile is slower than --fail-if-slower allows, else 0.
int run_diff(const DiffCommandOptions& o) {
  if (o.has_fail_if_slower && !(o.fail_if_slower >= 0 && std::isfinite(o.fail_if_slower)))
    throw InputError("--fail-if-slower", fmt::format("{} is not a percentage of 0 or more", o.fail_if_slower));
  if (o.width != 0 && o.width < kMinReportWidth)
    throw InputError("--width", fmt::format("{} is narrower than the report's least width, {}", o.width, kMinReportWidth));
  const ProfileReader base(o.base);
  const ProfileReader next(o.next);
  const ProfileDiff d = diff_profiles(base, next);
  DiffTextOptions text;
  text.top = static_cast<std::size_t>(o.top);
  text.depth = o.depth;
  text.width = o.width != 0 ? o.width : terminal_width();
  text.color = !o.json && use_color(o.color);
  fmt::print("{}", o.json ? render_diff_json(d) : render_diff_text(d, text));
  std::fflush(stdout);
  if (o.has_fail_if_slower && d.slowdown_pct() > o.fail_if_slower) {
    fmt::print(stderr, "opprof: the new profile's kernel time is {:.1f}% above the base's: more than --fail-if-slower {}%\n",
               d.slowdown_pct(), o.fail_if_slower);
    return 1;
  }
  return 0;
}

}  // namespace

Command add_diff_command(CLI::App& app) {
  auto o = std::make_shared<DiffCommandOptions>();
  auto* cmd = app.add_subcommand("diff", "Compare the performance of two profiles: kernel time before and after");
  cmd->add_option("BASE", o->base, "Profile database before (the base)")->required();
  cmd->add_option("NEW", o->next, "Profile database after")->required();
  cmd->add_flag("--json", o->json, "Print the diff as JSON instead, every row (docs/report_json.md)");
  cmd->add_option("--top", o->top, "Rows per table (0: all)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--depth", o->depth, "Module levels (0: all)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--width", o->width, "Columns to fit the text in (default: the terminal's, else 100)");
  cmd->add_option("--color", o->color, "Colour: auto (on a terminal, unless NO_COLOR is set), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  cmd->add_option_function<double>(
         "--fail-if-slower",
         [o](const double& pct) {
           o->fail_if_slower = pct;
           o->has_fail_if_slower = true;
         },
         "Exit 1 when the new profile's kernel time exceeds the base's by more than PCT percent")
      ->option_text("PCT");
  cmd->footer(
      "Speedup is base time / new time (above 1: faster). Operators, module paths (inclusive time) and kernel\n"
      "families are joined by name; a family in one profile only is listed as added or removed. Two\n"
      "multi-process jobs are also compared rank by rank (ranks joined by number).\n"
      "Exit status: 0 done, 1 slower than --fail-if-slower allows, 2 bad input.");
  return {cmd, [o](const std::vector<std::string>&) { return run_diff(*o); }};
}

}  // namespace opprof::cli
