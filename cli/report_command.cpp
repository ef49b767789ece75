// `opprof report`: the terminal or JSON summary of a profile database (reads only the database).
#include "cli/report_command.hpp"

#include <fmt/format.h>

#include "opprof/report/json.hpp"
#include "opprof/report/terminal.hpp"
#include "opprof/store/profile_reader.hpp"

namespace opprof::cli {

void add_report_command(CLI::App& app, ReportOptions& o) {
  auto* cmd = app.add_subcommand("report", "Summarize a profile database (terminal table, or --json)");
  cmd->add_option("database", o.database, "Profile database written by `opprof attribute` or `opprof profile`")->required();
  cmd->add_flag("--json", o.json, "Print the machine-readable summary instead");
  cmd->add_option("--top", o.top, "Operators and modules to list (0: all)")->capture_default_str();
}

int run_report(const ReportOptions& o) {
  ProfileReader profile(o.database);
  opprof::ReportOptions options;
  options.top = static_cast<std::size_t>(std::max(0, o.top));
  fmt::print("{}", o.json ? render_json_report(profile, options) : render_terminal_report(profile, options));
  return 0;
}

}  // namespace opprof::cli
