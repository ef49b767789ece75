// `opprof report`: the terminal or JSON summary of a profile database (reads only the database).
#include <fmt/format.h>

#include <memory>

#include "cli/commands.hpp"
#include "opprof/report/html.hpp"
#include "opprof/report/json.hpp"
#include "opprof/report/terminal.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/atomic_file.hpp"

namespace opprof::cli {
namespace {

struct ReportCommandOptions {
  std::string database;
  bool json = false;
  std::string html;  // --html FILE: write the HTML report there instead of printing
  int top = 15;
  bool top_given = false;  // --json lists every row unless --top is given
  std::string by = "operator";
  int depth = 3;
  bool depth_given = false;  // --json writes the whole tree unless --depth is given
  std::string module_prefix;
  std::size_t width = 0;  // 0: the terminal's, or 100 when stdout is not one
  std::string color = "auto";
};

int run_report(const ReportCommandOptions& o) {
  if (o.width != 0 && o.width < kMinReportWidth)
    throw InputError("--width", fmt::format("{} is narrower than the report's least width, {}", o.width, kMinReportWidth));
  ProfileReader profile(o.database);
  if (!o.html.empty()) {
    write_file_atomically(o.html, render_html_report(profile));
    return 0;
  }
  opprof::ReportOptions options;
  options.top = static_cast<std::size_t>(o.json && !o.top_given ? 0 : o.top);
  options.by = report_by_from_string(o.by);
  options.depth = o.json && !o.depth_given ? 0 : o.depth;
  options.module_prefix = o.module_prefix;
  options.width = o.width != 0 ? o.width : terminal_width();
  options.color = !o.json && use_color(o.color);
  fmt::print("{}", o.json ? render_json_report(profile, options) : render_terminal_report(profile, options));
  return 0;
}

}  // namespace

Command add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportCommandOptions>();
  auto* cmd = app.add_subcommand("report", "Summarize a profile database (terminal table, or --json)");
  cmd->add_option("database", o->database, "Profile database written by `opprof attribute` or `opprof profile`")->required();
  cmd->add_flag("--json", o->json, "Print the machine-readable summary instead (docs/report_json.md)");
  cmd->add_option("--html", o->html, "Write a self-contained HTML report (charts, roofline, tables) to this file")
      ->excludes("--json");
  cmd->add_option_function<int>("--top", [o](const int& n) { o->top = n, o->top_given = true; },
                                "Rows per table and module tree nodes to list (0: all; default 15, --json all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--by", o->by, "Main table: kernel time by operator, module, family, source-line or phase")
      ->check(CLI::IsMember({"operator", "module", "family", "source-line", "phase"}))
      ->capture_default_str();
  cmd->add_option_function<int>("--depth", [o](const int& n) { o->depth = n, o->depth_given = true; },
                                "Module tree levels to show (0: all; default 3, --json all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--module", o->module_prefix, "Show only the module tree below this module path (h.3.attn)");
  cmd->add_option("--width", o->width, "Columns to fit the report in (default: the terminal's, else 100)");
  cmd->add_option("--color", o->color, "Colour: auto (on a terminal, unless NO_COLOR is set), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  return {cmd, [o](const std::vector<std::string>&) { return run_report(*o); }};
}

}  // namespace opprof::cli
