// `opprof attribute`: captured artifacts -> attributed, counter-annotated profile database.
#include "cli/attribute_command.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <optional>

#include "opprof/attribute/engine.hpp"
#include "opprof/attribute/input_checks.hpp"
#include "opprof/ingest/inductor.hpp"
#include "opprof/ingest/kineto.hpp"
#include "opprof/ingest/timeline_source.hpp"
#include "opprof/ingest/ncu_csv.hpp"
#include "opprof/match/ncu_match.hpp"
#include "opprof/metrics/aggregate.hpp"
#include "opprof/metrics/metric_set.hpp"
#include "opprof/store/profile_db.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof::cli {
namespace {

class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Progress lines go to stderr so that stdout stays clean for scripts; quiet silences them.
class Progress {
 public:
  explicit Progress(bool quiet) : quiet_(quiet) {}
  template <typename... Args>
  void say(fmt::format_string<Args...> f, Args&&... args) {
    if (quiet_) return;
    fmt::print(stderr, "opprof: {}\n", fmt::format(f, std::forward<Args>(args)...));
  }
  // Warnings are not progress: -q keeps them.
  template <typename... Args>
  void warn(fmt::format_string<Args...> f, Args&&... args) {
    end_line();
    fmt::print(stderr, "opprof: warning: {}\n", fmt::format(f, std::forward<Args>(args)...));
  }
  void bytes(std::uint64_t done, std::uint64_t total) {
    if (quiet_ || total == 0) return;
    double pct = std::min(100.0, 100.0 * double(done) / double(total));
    if (tty_) {
      fmt::print(stderr, "\ropprof: reading trace {:.0f} MB ({:.0f}% of the file)", double(done) / 1e6, pct);
      partial_line_ = true;
    } else if (pct >= next_pct_) {  // a log gets a line per quarter
      fmt::print(stderr, "opprof: reading trace {:.0f} MB ({:.0f}% of the file)\n", double(done) / 1e6, pct);
      next_pct_ = pct + 25;
    }
  }
  void end_line() {
    if (partial_line_ && !quiet_) fmt::print(stderr, "\n");
    partial_line_ = false;
  }

 private:
  bool quiet_;
  bool tty_ = isatty(STDERR_FILENO) != 0;
  bool partial_line_ = false;
  double next_pct_ = 25;
};

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", tm);
}

void require_exists(const std::string& path) {
  if (!std::filesystem::exists(path)) throw InputError(path, "no such file or directory");
}

}  // namespace

void add_attribute_command(CLI::App& app, AttributeOptions& o) {
  auto* cmd = app.add_subcommand("attribute", "Attribute a capture's kernels to operators and modules, with ncu counters");
  cmd->add_option("--trace", o.trace, "Timeline: torch.profiler trace JSON (.json or .json.gz)")->required();
  cmd->add_option("--ncu", o.ncu, "ncu --csv --page raw --print-units base output of the same window (.csv or .csv.gz)");
  cmd->add_option("--inductor", o.inductor,
                  "Inductor debug directory (TORCH_COMPILE_DEBUG_DIR or opprof's capture directory)");
  cmd->add_option("--metrics", o.metrics, "Metric-set file replacing the built-in set (see `opprof metrics`)");
  cmd->add_option("--opaque-backends", o.opaque, "File of operators to flag as opaque library backends");
  cmd->add_option("-o,--output", o.output, "Profile database to write")->required();
  cmd->add_flag("--all-ranges", o.all_ranges,
                "Store every operator range, also those that launched no GPU work (a larger database)");
  cmd->add_flag("--strict-launch-config", o.strict_launch_config,
                "Leave an ncu row unmatched when its kernel's grid or block differ from the timeline's (another "
                "launch configuration of the same kernel) instead of matching it with a warning");
  cmd->add_flag("-q,--quiet", o.quiet, "No progress on stderr");
  cmd->footer(
      "Writes the profile atomically: on any error no database is left behind and an existing one is kept.\n"
      "Exit status: 0 done, 2 bad input, 1 other failure.");
}

int run_attribute(const AttributeOptions& o, const std::map<std::string, std::string>& extra_metadata) {
  Progress progress(o.quiet);
  Stopwatch total;
  std::map<std::string, std::string> meta = extra_metadata;

  require_exists(o.trace);
  if (!o.ncu.empty()) require_exists(o.ncu);
  if (!o.inductor.empty()) require_exists(o.inductor);
  if (std::filesystem::is_directory(o.output)) throw InputError(o.output, "the output is a directory, not a file");

  // Inputs that are cheap to check go first, so that a bad one fails before the long read.
  MetricSet metric_set = load_metric_set(o.metrics);
  AttributionOptions attribution_options;
  if (!o.opaque.empty()) attribution_options.opaque = OpaqueBackends::parse(read_file(o.opaque), o.opaque);

  Stopwatch sw;
  KinetoReadStats stats;
  TimelineFormat format = TimelineFormat::kKinetoJson;
  Timeline tl = read_timeline(o.trace, &stats, [&](std::uint64_t done, std::uint64_t all) { progress.bytes(done, all); },
                              &format);
  progress.end_line();
  double read_s = sw.seconds();
  meta["trace.format"] = to_string(format);
  progress.say("read {} events ({}, {:.0f} MB) in {:.2f} s: {} GPU activities, {} launches, {} ranges", stats.events,
               to_string(format), double(stats.bytes) / 1e6, read_s, tl.kernels.size(), tl.launches.size(), tl.ranges.size());
  if (tl.kernels.size() == 0) throw InputError(o.trace, "the trace holds no GPU activity (was CUDA profiled?)");

  std::string chip = chip_for_capture(tl.metadata);
  require_rows_for_chip(metric_set, chip);
  MetricSet chip_set = metric_set.for_chip(chip.empty() ? "*" : chip);
  if (!chip.empty()) {
    MetricCatalog catalog = builtin_metric_catalog(chip);
    if (!catalog.entries.empty()) {
      auto problems = validate_metric_names(chip_set, catalog);
      if (!problems.empty()) {
        // Each problem reads "<source>:<line>: <metric>: <what>"; name the line as an input position.
        for (const auto& m : chip_set.metrics) {
          std::string prefix = fmt::format("{}:{}: ", chip_set.source, m.line);
          if (starts_with(problems.front(), prefix + m.name + ":"))
            throw InputError(chip_set.source, problems.front().substr(prefix.size()), {m.line, 1, 0, true});
        }
        throw InputError(chip_set.source, problems.front());
      }
    }
  }

  std::vector<std::string> warnings;  // stored in the profile: the report repeats them
  std::optional<InductorArtifacts> inductor;
  if (!o.inductor.empty()) {
    sw = Stopwatch();
    inductor = read_inductor_artifacts(o.inductor);
    progress.say("read {} Inductor graph(s) and {} FX module map(s) in {:.2f} s", inductor->graphs.size(),
                 inductor->module_maps.size(), sw.seconds());
    for (std::string& w : check_inductor_matches_timeline(tl, *inductor, o.inductor)) warnings.push_back(std::move(w));
  } else if (std::string w = compiled_without_inductor_warning(tl); !w.empty()) {
    warnings.push_back(std::move(w));
  }
  for (const std::string& w : warnings) progress.warn("{}", w);

  std::optional<NcuTable> ncu;
  if (!o.ncu.empty()) {
    sw = Stopwatch();
    ncu = read_ncu_csv(o.ncu);
    progress.say("read {} ncu rows with {} metric columns in {:.2f} s", ncu->rows(), ncu->metric_names.size(),
                 sw.seconds());
  }

  sw = Stopwatch();
  AttributionNotes notes;
  AttributionTable attribution = attribute_timeline(tl, inductor ? &*inductor : nullptr, attribution_options, &notes);
  double attribute_s = sw.seconds();
  progress.say("attributed {} GPU activities in {:.2f} s ({:.1f} M/s)", tl.kernels.size(), attribute_s,
               attribute_s > 0 ? double(tl.kernels.size()) / attribute_s / 1e6 : 0.0);

  std::optional<NcuMatch> match;
  KernelMetrics kernel_metrics;
  kernel_metrics.kernels = tl.kernels.size();
  if (ncu) {
    sw = Stopwatch();
    NcuMatchOptions match_options;
    match_options.strict_launch_config = o.strict_launch_config;
    match = match_ncu(tl, *ncu, match_options);
    kernel_metrics = collect_kernel_metrics(tl, *ncu, *match, chip_set);
    progress.say("matched {} of {} ncu rows to kernels in {:.2f} s ({} rows and {} kernels unmatched)", match->matched,
                 ncu->rows(), sw.seconds(), match->unmatched_rows.size(), match->unmatched_kernels.size());
    for (const auto& m : kernel_metrics.missing)
      progress.say("warning: the ncu CSV has no column for metric {} of the set", m);
    if (match->launch_config_differs > 0)
      progress.warn("{} ncu {} with a kernel of the same name whose grid or block differ (another "
                    "launch configuration of the same kernel){}",
                    match->launch_config_differs, match->launch_config_differs == 1 ? "row pairs" : "rows pair",
                    o.strict_launch_config ? ": left unmatched (--strict-launch-config)"
                                           : ": matched, their counters come from the other configuration");
  }

  Aggregates aggregates = aggregate(tl, attribution, kernel_metrics);
  Coverage coverage = compute_coverage(tl, attribution, match ? &*match : nullptr, ncu ? ncu->rows() : 0);

  meta["opprof_version"] = OPPROF_VERSION;
  meta["created_at"] = now_iso8601();
  meta["inputs.trace"] = std::filesystem::absolute(o.trace).string();
  if (!o.ncu.empty()) meta["inputs.ncu"] = std::filesystem::absolute(o.ncu).string();
  if (!o.inductor.empty()) meta["inputs.inductor"] = std::filesystem::absolute(o.inductor).string();
  meta["metric_set"] = metric_set.source;
  meta["chip"] = chip;
  for (const auto& [key, value] : tl.metadata) meta["timeline." + key] = value;
  for (std::size_t i = 0; i < notes.lines.size(); ++i) meta[fmt::format("note.attribution.{}", i)] = notes.lines[i];
  for (std::size_t i = 0; i < warnings.size(); ++i) meta[fmt::format("warning.attribute.{}", i)] = warnings[i];
  meta["timing.read_s"] = fmt::format("{:.3f}", read_s);
  meta["timing.attribute_s"] = fmt::format("{:.3f}", attribute_s);

  ProfileInputs in;
  in.timeline = &tl;
  in.attribution = &attribution;
  in.aggregates = &aggregates;
  in.coverage = &coverage;
  if (ncu) {
    in.kernel_metrics = &kernel_metrics;
    in.ncu = &*ncu;
    in.match = &*match;
  }
  if (!o.all_ranges) in.operator_ranges_to_keep = &notes.operator_on_launch_path;
  in.metadata = std::move(meta);
  sw = Stopwatch();
  write_profile_db(o.output, in);
  progress.say("wrote {} in {:.2f} s (total {:.2f} s): {:.1f}% of kernel time attributed to operators, {:.1f}% to modules",
               o.output, sw.seconds(), total.seconds(), coverage.pct(coverage.attributed_ns),
               coverage.pct(coverage.module_attributed_ns));
  return 0;
}

}  // namespace opprof::cli
