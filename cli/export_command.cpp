// `opprof export`: the profile in another tool's format (reads only the database).
#include <fmt/format.h>

#include <memory>

#include "cli/commands.hpp"
#include "opprof/export/perfetto.hpp"
#include "opprof/store/profile_reader.hpp"

namespace opprof::cli {
namespace {

struct ExportOptions {
  std::string database;
  std::string perfetto;
  bool quiet = false;
};

int run_export(const ExportOptions& o) {
  ProfileReader profile(o.database);
  const PerfettoExportStats s = export_perfetto(profile, o.perfetto);
  if (!o.quiet)
    fmt::print(stderr, "opprof export: wrote {} ({} GPU activities, {} launches, {} ranges, {} flows, {} counter events)\n",
               o.perfetto, s.kernels, s.launches, s.ranges, s.flows, s.counter_events);
  return 0;
}

}  // namespace

Command add_export_command(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  auto* cmd = app.add_subcommand("export", "Write a profile database in another tool's format (--perfetto)");
  cmd->add_option("database", o->database, "Profile database written by `opprof attribute` or `opprof profile`")->required();
  cmd->add_option("--perfetto", o->perfetto,
                  "Chrome trace-event JSON for ui.perfetto.dev: kernels on their streams, launches and ranges on "
                  "their threads, flows, ncu counter tracks")
      ->required();
  cmd->add_flag("--quiet", o->quiet, "Print nothing on success");
  return {cmd, [o](const std::vector<std::string>&) { return run_export(*o); }};
}

}  // namespace opprof::cli
