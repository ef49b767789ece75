// `opprof report`: the terminal or JSON summary of a profile database (reads only the database).
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "cli/commands.hpp"
#include "opprof/report/html.hpp"
#include "opprof/report/json.hpp"
#include "opprof/report/terminal.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/atomic_file.hpp"

namespace opprof::cli {
namespace {

struct ReportOptions {
  std::string database;
  bool json = false;
  std::string html;  // --html FILE: write the HTML report there instead of printing
  int top = 15;
};

int run_report(const ReportOptions& o) {
  ProfileReader profile(o.database);
  if (!o.html.empty()) {
    write_file_atomically(o.html, render_html_report(profile));
    return 0;
  }
  opprof::ReportOptions options;
  options.top = static_cast<std::size_t>(std::max(0, o.top));
  fmt::print("{}", o.json ? render_json_report(profile, options) : render_terminal_report(profile, options));
  return 0;
}

}  // namespace

Command add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  auto* cmd = app.add_subcommand("report", "Summarize a profile database (terminal table, or --json)");
  cmd->add_option("database", o->database, "Profile database written by `opprof attribute` or `opprof profile`")->required();
  cmd->add_flag("--json", o->json, "Print the machine-readable summary instead");
  cmd->add_option("--html", o->html, "Write a self-contained HTML report (charts, roofline, tables) to this file")
      ->excludes("--json");
  cmd->add_option("--top", o->top, "Operators and modules to list (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  return {cmd, [o](const std::vector<std::string>&) { return run_report(*o); }};
}

}  // namespace opprof::cli
