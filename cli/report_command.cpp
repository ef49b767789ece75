// `opprof report`: the terminal or JSON summary of a profile database (reads only the database).
#include "cli/report_command.hpp"

#include <fmt/format.h>

#include <fstream>

#include "opprof/report/json.hpp"
#include "opprof/report/terminal.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/error.hpp"

namespace opprof::cli {
namespace {
void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw OutputError(fmt::format("{}: cannot write", path.string()));
}
}  // namespace

void add_report_command(CLI::App& app, ReportOptions& o) {
  auto* cmd = app.add_subcommand("report", "Summarize a profile database (terminal table, or --json)");
  cmd->add_option("database", o.database, "Profile database written by `opprof attribute` or `opprof profile`")->required();
  cmd->add_flag("--json", o.json, "Print the machine-readable summary instead");
  cmd->add_option("--top", o.top, "Operators and modules to list (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

int run_report(const ReportOptions& o) {
  ProfileReader profile(o.database);
  opprof::ReportOptions options;
  options.top = static_cast<std::size_t>(std::max(0, o.top));
  fmt::print("{}", o.json ? render_json_report(profile, options) : render_terminal_report(profile, options));
  return 0;
}

std::string render_report_text(const std::string& database) {
  return render_terminal_report(ProfileReader(database));
}

void write_report_files(const std::string& database, const std::filesystem::path& dir) {
  ProfileReader profile(database);
  write_text(dir / "report.txt", render_terminal_report(profile));
  write_text(dir / "report.json", render_json_report(profile));
}

}  // namespace opprof::cli
