#include "opprof/pipeline/attribute.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "opprof/attribute/input_checks.hpp"
#include "opprof/ingest/inductor.hpp"
#include "opprof/store/profile_db.hpp"
#include "opprof/util/atomic_file.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

void tell(ProgressObserver* observer, const AttributeEvent& event) {
  if (observer) observer->on_attribute(event);
}

void require_exists(const std::string& path) {
  if (!std::filesystem::exists(path)) throw InputError(path, "no such file or directory");
}

// What the request's cheap inputs give, checked before the trace is read.
struct CheckedInputs {
  MetricSet metric_set;
  AttributionOptions attribution;
};

CheckedInputs check_inputs(const AttributeRequest& r) {
  require_exists(r.trace);
  if (!r.ncu.empty()) require_exists(r.ncu);
  if (r.dedup.mode == DedupMode::kLayers && !r.ncu.empty()) require_exists(r.dedup.structure);
  if (!r.inductor.empty()) require_exists(r.inductor);
  if (!r.output.empty()) check_output_file(r.output);
  CheckedInputs c{load_metric_set(r.metrics), r.attribution};
  if (!r.opaque_backends.empty())
    c.attribution.opaque = OpaqueBackends::parse(read_file(r.opaque_backends), r.opaque_backends);
  return c;
}

// The first metric of the chip's set that the chip's ncu catalog rejects, as an error at its line.
void require_collectable(const MetricSet& chip_set, const std::string& chip) {
  if (chip.empty()) return;
  MetricCatalog catalog = builtin_metric_catalog(chip);
  if (catalog.entries.empty()) return;
  auto problems = validate_metric_names(chip_set, catalog);
  if (problems.empty()) return;
  const MetricProblem& p = problems.front();
  throw InputError(p.source, p.metric + ": " + p.message, {p.line, 1, 0, true});
}

// A per-launch-config dedup capture whose --launch-count the request does not say (a capture of an earlier
// version, which ran 1 + verify, or one made by hand): the launch count whose plan replays as many kernels as
// ncu has rows replaces the plan, with a warning. Where the request names a count the rows contradict and
// another fits, an InputError names it. Returns "" where the plan fits the rows or no count does (the
// matching then reports the difference).
std::string fit_launch_count(const Timeline& tl, const AttributionTable& attribution, const DedupRequest& request,
                             std::size_t ncu_rows, DedupPlan& plan) {
  if (!by_launch_config(plan.selection) || plan.kernels_replayed == ncu_rows) return "";
  for (int count = 1; count <= kMaxLaunchCount; ++count) {
    if (count == plan.launch_count) continue;
    DedupRequest fitted = request;
    fitted.launch_count = count;
    DedupPlan p = build_dedup_plan(tl, attribution, fitted);
    if (p.kernels_replayed != ncu_rows) continue;
    if (request.launch_count > 0)
      throw InputError("--dedup-launch-count",
                       fmt::format("--launch-count {} would have replayed {} kernels, the ncu CSV has {} rows: pass B "
                                   "ran --launch-count {} (leave the option out to plan with the count the rows say)",
                                   request.launch_count, plan.kernels_replayed, ncu_rows, count));
    std::string w = fmt::format("dedup: the plan's ncu --launch-count {} would replay {} kernels, ncu has {} rows: "
                                "the capture ran --launch-count {} (a capture of an earlier opprof or by hand), "
                                "planned with that",
                                plan.launch_count, plan.kernels_replayed, ncu_rows, count);
    plan = std::move(p);
    return w;
  }
  return "";
}

AttributeResult attribute_checked(TimelineCapture capture, const AttributeRequest& request, const CheckedInputs& in,
                                  ProgressObserver* observer);
// Writes what attribution added to the database whose timeline tables db has written, and publishes it.
void finish_profile(const AttributeResult& r, const std::string& path, ProfileDbWriter& db, ProgressObserver* observer,
                    const JobTables* job);

}  // namespace

std::uint64_t TimelineCapture::kernel_count() const {
  std::uint64_t n = 0;
  for (auto kind : timeline.kernels.kind) n += kind == ActivityKind::kKernel;
  return n;
}

TimelineCapture read_capture_timeline(const std::string& path, ProgressObserver* observer) {
  TimelineCapture c;
  Stopwatch sw;
  c.timeline = read_timeline(
      path, &c.stats, [&](std::uint64_t done, std::uint64_t total) { tell(observer, progress::TraceBytes{done, total}); },
      &c.format);
  c.read_s = sw.seconds();
  const Timeline& tl = c.timeline;
  tell(observer, progress::TraceRead{c.stats.events, c.stats.bytes, c.format, c.read_s, tl.kernels.size(),
                                     tl.launches.size(), tl.ranges.size()});
  return c;
}

AttributeResult attribute_capture(const AttributeRequest& request, ProgressObserver* observer) {
  const CheckedInputs in = check_inputs(request);
  return attribute_checked(read_capture_timeline(request.trace, observer), request, in, observer);
}

AttributeResult attribute_capture(TimelineCapture capture, const AttributeRequest& request, ProgressObserver* observer) {
  return attribute_checked(std::move(capture), request, check_inputs(request), observer);
}

namespace {

AttributeResult attribute_checked(TimelineCapture capture, const AttributeRequest& request, const CheckedInputs& in,
                                  ProgressObserver* observer) {
  Stopwatch total;
  AttributeResult r;
  r.capture = std::move(capture);
  r.all_ranges = request.all_ranges;
  Timeline& tl = r.capture.timeline;
  if (tl.kernels.size() == 0) throw InputError(request.trace, "the trace holds no GPU activity (was CUDA profiled?)");
  check_timeline_times(tl, request.trace);

  r.chip = chip_for_capture(tl.metadata);
  require_rows_for_chip(in.metric_set, r.chip);
  r.metric_set = in.metric_set.for_chip(r.chip.empty() ? "*" : r.chip);
  require_collectable(r.metric_set, r.chip);
  // The timeline's own tables go into the database on another core while the timeline is attributed.
  std::optional<ProfileDbWriter> db;
  if (!request.output.empty()) db.emplace(request.output, tl, /*background=*/true);

  std::vector<std::string> warnings;  // stored in the profile: the report repeats them
  std::optional<InductorArtifacts> inductor;
  if (!request.inductor.empty()) {
    Stopwatch sw;
    inductor = read_inductor_artifacts(request.inductor);
    tell(observer, progress::InductorRead{inductor->graphs.size(), inductor->module_maps.size(), sw.seconds()});
    warnings = check_inductor_matches_timeline(tl, *inductor, request.inductor);
  } else if (std::string w = compiled_without_inductor_warning(tl); !w.empty()) {
    warnings.push_back(std::move(w));
  }
  for (const std::string& w : warnings) tell(observer, progress::Warning{w});
  if (request.ncu_rows) {
    r.ncu = *request.ncu_rows;
  } else if (!request.ncu.empty()) {
    Stopwatch sw;
    r.ncu = read_ncu_csv(request.ncu);
    tell(observer, progress::NcuRead{r.ncu->rows(), r.ncu->metric_names.size(), sw.seconds()});
  }

  Stopwatch sw;
  r.attribution = attribute_timeline(tl, inductor ? &*inductor : nullptr, in.attribution, &r.notes);
  const double attribute_s = sw.seconds();
  tell(observer, progress::Attributed{tl.kernels.size(), attribute_s});

  r.kernel_metrics.kernels = tl.kernels.size();
  if (r.ncu) {
    sw = Stopwatch();
    NcuMatchOptions matching = request.matching;
    if (request.dedup.mode != DedupMode::kOff) {
      r.dedup = build_dedup_plan(tl, r.attribution, request.dedup);
      if (std::string w = fit_launch_count(tl, r.attribution, request.dedup, r.ncu->rows(), *r.dedup); !w.empty())
        warnings.push_back(std::move(w)), tell(observer, progress::Warning{warnings.back()});
      if (r.dedup->kernels_other_work > 0) {
        warnings.push_back("dedup: " + other_work_note(*r.dedup));
        tell(observer, progress::Warning{warnings.back()});
      }
      matching.replayed = &r.dedup->replayed;
    }
    r.match = match_ncu(tl, *r.ncu, matching, &r.notes.anomalies);
    r.kernel_metrics = collect_kernel_metrics(tl, *r.ncu, *r.match, r.metric_set);
    if (r.dedup) {
      r.propagation = propagate_counters(*r.dedup, r.kernel_metrics);
      r.dedup_deviation = verify_deviation(tl, *r.dedup, r.kernel_metrics);
      if (r.propagation.without_source > 0)
        tell(observer, progress::Warning{fmt::format(
                           "dedup: {} duplicate kernels stay without counters: their representative kernel got no "
                           "ncu row",
                           r.propagation.without_source)});
    }
    tell(observer, progress::Matched{r.match->matched, r.ncu->rows(), r.match->unmatched_rows.size(),
                                     r.match->unmatched_kernels.size(), sw.seconds()});
    for (const auto& m : r.kernel_metrics.missing) tell(observer, progress::MissingMetric{m});
    if (const std::size_t n = r.match->launch_config_differs; n > 0)
      tell(observer, progress::Warning{fmt::format(
                         "{} ncu {} with a kernel of the same name whose grid or block differ (another launch "
                         "configuration of the same kernel){}",
                         n, n == 1 ? "row pairs" : "rows pair",
                         request.matching.strict_launch_config
                             ? ": left unmatched (--strict-launch-config)"
                             : ": matched, their counters come from the other configuration")});
  }

  r.aggregates = aggregate(tl, r.attribution, r.kernel_metrics);
  r.coverage = compute_coverage(tl, r.attribution, r.match ? &*r.match : nullptr, r.ncu ? r.ncu->rows() : 0);

  auto& meta = r.metadata;
  meta = request.extra_metadata;
  meta["trace.format"] = to_string(r.capture.format);
  meta["inputs.trace"] = std::filesystem::absolute(request.trace).string();
  if (!request.ncu.empty()) meta["inputs.ncu"] = std::filesystem::absolute(request.ncu).string();
  if (!request.inductor.empty()) meta["inputs.inductor"] = std::filesystem::absolute(request.inductor).string();
  meta["metric_set"] = in.metric_set.source;
  meta["chip"] = r.chip;
  for (std::size_t i = 0; i < r.notes.lines.size(); ++i) meta[fmt::format("note.attribution.{}", i)] = r.notes.lines[i];
  for (std::size_t i = 0; i < warnings.size(); ++i) meta[fmt::format("warning.attribute.{}", i)] = warnings[i];
  meta["timing.read_s"] = fmt::format("{:.3f}", r.capture.read_s);
  meta["timing.attribute_s"] = fmt::format("{:.3f}", attribute_s);
  r.elapsed_s = r.capture.read_s + total.seconds();

  if (db) finish_profile(r, request.output, *db, observer, nullptr);
  return r;
}

void finish_profile(const AttributeResult& r, const std::string& path, ProfileDbWriter& db, ProgressObserver* observer,
                    const JobTables* job) {
  Stopwatch sw;
  ProfileInputs in;
  in.timeline = &r.timeline();
  in.attribution = &r.attribution;
  in.aggregates = &r.aggregates;
  in.coverage = &r.coverage;
  if (r.ncu) {
    in.kernel_metrics = &r.kernel_metrics;
    in.ncu = &*r.ncu;
    in.match = &*r.match;
  }
  if (r.dedup) {
    in.dedup = &*r.dedup;
    in.propagation = &r.propagation;
    in.dedup_deviation = &r.dedup_deviation;
  }
  if (!r.all_ranges) in.operator_ranges_to_keep = &r.notes.operator_on_launch_path;
  in.anomalies = &r.notes.anomalies;
  in.metadata = r.metadata;
  in.job = job;
  db.finish(in);
  const double write_s = sw.seconds();
  tell(observer, progress::Written{path, write_s, r.elapsed_s + write_s, r.coverage.pct(r.coverage.attributed_ns),
                                   r.coverage.pct(r.coverage.module_attributed_ns)});
}

}  // namespace

void write_profile(const AttributeResult& r, const std::string& path, ProgressObserver* observer, const JobTables* job) {
  ProfileDbWriter db(path, r.timeline(), /*background=*/false);
  finish_profile(r, path, db, observer, job);
}

}  // namespace opprof
