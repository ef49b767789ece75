// `opprof export`: the profile in another tool's format (reads only the database).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

#include "cli/commands.hpp"
#include "opprof/export/parquet.hpp"
#include "opprof/export/perfetto.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/interrupt.hpp"

namespace opprof::cli {
namespace {

struct ExportOptions {
  std::string database;
  std::string perfetto;
  std::string parquet;
  bool quiet = false;
};

int run_export(const ExportOptions& o) {
  if (o.perfetto.empty() && o.parquet.empty())
    throw InputError("opprof export", "give --perfetto FILE, --parquet DIR, or both");
  ProfileReader profile(o.database);
  if (!o.perfetto.empty()) {
    const PerfettoExportStats s = export_perfetto(profile, o.perfetto);
    if (!o.quiet)
      fmt::print(stderr,
                 "opprof export: wrote {} ({} GPU activities, {} launches, {} ranges, {} flows, {} counter events)\n",
                 o.perfetto, s.kernels, s.launches, s.ranges, s.flows, s.counter_events);
  }
  if (!o.parquet.empty()) {
    const ParquetExportStats s = export_parquet(profile, o.parquet);
    if (s.interrupted) {
      fmt::print(stderr, "opprof export: interrupted; {} was not written\n", o.parquet);
      return 128 + interrupt_signal();
    }
    if (!o.quiet)
      fmt::print(stderr,
                 "opprof export: wrote {} ({} GPU activities with {} metric columns, {} operator and {} module rows, {} "
                 "collectives; {} partitions: {}; {} files)\n",
                 o.parquet, s.kernels, s.metrics, s.operators, s.modules, s.collectives, s.partitions.size(),
                 fmt::join(s.partitions, ", "), s.files.size());
  }
  return 0;
}

}  // namespace

Command add_export_command(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  auto* cmd = app.add_subcommand("export", "Write a profile database in another tool's format (--perfetto, --parquet)");
  cmd->add_option("database", o->database, "Profile database written by `opprof attribute` or `opprof profile`")->required();
  cmd->add_option("--perfetto", o->perfetto,
                  "Chrome trace-event JSON for ui.perfetto.dev: kernels on their streams, launches and ranges on "
                  "their threads, flows, ncu counter tracks");
  cmd->add_option("--parquet", o->parquet,
                  "Directory of Parquet datasets partitioned by rank (kernels with attribution, phase and counters; "
                  "operators, modules, collectives; docs/parquet.md), for DuckDB or Spark; replaces an earlier "
                  "export there. This build: " +
                      parquet_library_description());
  cmd->add_flag("--quiet", o->quiet, "Print nothing on success");
  cmd->footer("Exit status: 0 done, 2 bad input, 1 other failure.");
  return {cmd, [o](const std::vector<std::string>&) { return run_export(*o); }};
}

}  // namespace opprof::cli
