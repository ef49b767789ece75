#pragma once
// The attribute pipeline as one call: captured artifacts (a timeline, optionally ncu counters of the same
// window and Inductor's debug directory) -> the in-memory profile (attribution, ncu match, per-kernel
// counters, aggregates, coverage, metadata), and the profile database written from it. `opprof attribute`,
// `opprof profile`, the tests and the Python side call this; nothing else strings the stages together.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "opprof/attribute/engine.hpp"
#include "opprof/dedup/dedup_plan.hpp"
#include "opprof/dedup/propagation.hpp"
#include "opprof/ingest/ncu_csv.hpp"
#include "opprof/ingest/timeline_source.hpp"
#include "opprof/match/ncu_match.hpp"
#include "opprof/metrics/aggregate.hpp"
#include "opprof/metrics/metric_set.hpp"
#include "opprof/store/profile_db.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

// What to attribute: input files ("" for those not given) and options. New options of attribution or
// matching go into `attribution` (or a sibling struct) so that every caller passes them the same way.
struct AttributeRequest {
  std::string trace;            // timeline: Kineto JSON (.json/.gz), tracer log or nsys SQLite
  std::string ncu;              // ncu --csv --page raw --print-units base of the same window
  const NcuTable* ncu_rows = nullptr;  // in place of ncu: rows already read (one process's of a job's CSV)
  std::string inductor;         // Inductor debug directory
  std::string metrics;          // metric-set file replacing the built-in set
  std::string opaque_backends;  // file of operators to flag as opaque library backends
  // When not empty, checked before the long read and written at the end (atomically).
  std::string output;
  // Store every operator range, also those that launched no GPU work.
  bool all_ranges = false;
  AttributionOptions attribution;  // filled from opaque_backends when that is given
  NcuMatchOptions matching;        // --strict-launch-config
  // Layer dedup: the ncu CSV holds the plan's replay set only; the plan is rebuilt from the timeline, the
  // attribution and the structure file exactly as `opprof profile` built it before pass B.
  DedupRequest dedup;
  // Stored in the profile's meta table beside the pipeline's own keys (capture facts of `opprof profile`).
  std::map<std::string, std::string> extra_metadata;
};

// A timeline read from its file, with what the reader saw.
struct TimelineCapture {
  Timeline timeline;
  TimelineFormat format = TimelineFormat::kKinetoJson;
  KinetoReadStats stats;
  double read_s = 0;
  std::uint64_t kernel_count() const;  // activities of kind kernel (not memcpy/memset)
};

// The in-memory profile.
struct AttributeResult {
  TimelineCapture capture;
  std::string chip;       // the capture's ncu chip ("gh100"), "" when the timeline does not say
  MetricSet metric_set;   // the set for that chip
  AttributionTable attribution;
  AttributionNotes notes;
  std::optional<NcuTable> ncu;
  std::optional<NcuMatch> match;
  KernelMetrics kernel_metrics;  // per-kernel counters; no metrics without ncu
  std::optional<DedupPlan> dedup;                 // with request.dedup (and ncu)
  PropagationResult propagation;
  std::vector<MetricDeviation> dedup_deviation;   // --dedup-verify: per metric
  Aggregates aggregates;
  Coverage coverage;
  // The pipeline's meta keys (inputs, metric set, chip, notes, timings) and the request's extra ones;
  // the database writer adds opprof_version, created_at, timeline.*, ncu.* and schema_version itself.
  std::map<std::string, std::string> metadata;
  bool all_ranges = false;
  double elapsed_s = 0;  // from the call's start to the end of coverage

  const Timeline& timeline() const { return capture.timeline; }
};

// Progress as data, one struct per stage; a caller prints them (the CLI) or ignores them (tests).
namespace progress {
struct TraceBytes {  // while the trace is read; total is the file's size (compressed for .gz)
  std::uint64_t done = 0, total = 0;
};
struct TraceRead {
  std::uint64_t events = 0, bytes = 0;
  TimelineFormat format = TimelineFormat::kKinetoJson;
  double seconds = 0;
  std::size_t kernels = 0, launches = 0, ranges = 0;
};
struct InductorRead {
  std::size_t graphs = 0, module_maps = 0;
  double seconds = 0;
};
struct NcuRead {
  std::size_t rows = 0, metric_columns = 0;
  double seconds = 0;
};
struct Attributed {
  std::size_t kernels = 0;
  double seconds = 0;
};
struct Matched {
  std::size_t matched = 0, rows = 0, unmatched_rows = 0, unmatched_kernels = 0;
  double seconds = 0;
};
struct MissingMetric {  // a metric of the set without a column in the ncu CSV
  std::string name;
};
struct Warning {  // an input that fits the capture only in part; also stored as meta "warning.<stage>.<n>"
  std::string text;
};
struct Written {
  std::string path;
  double seconds = 0, total_seconds = 0;
  double attributed_pct = 0, module_attributed_pct = 0;
};
}  // namespace progress
using AttributeEvent = std::variant<progress::TraceBytes, progress::TraceRead, progress::InductorRead,
                                    progress::NcuRead, progress::Attributed, progress::Matched,
                                    progress::MissingMetric, progress::Warning, progress::Written>;

class ProgressObserver {
 public:
  virtual ~ProgressObserver() = default;
  virtual void on_attribute(const AttributeEvent& event) = 0;
};

// Reads a timeline in whatever format the file holds.
TimelineCapture read_capture_timeline(const std::string& path, ProgressObserver* observer = nullptr);

// Checks the request's inputs (cheap ones first, so that a bad one fails before the long read), reads
// the trace, attributes, matches and aggregates; writes the database when request.output is set.
// Throws InputError naming the file (and line) of a bad input; observer may be null.
AttributeResult attribute_capture(const AttributeRequest& request, ProgressObserver* observer = nullptr);
// The same with the timeline already read (request.trace only names it in the metadata).
AttributeResult attribute_capture(TimelineCapture capture, const AttributeRequest& request,
                                  ProgressObserver* observer = nullptr);

// Writes the profile database atomically (store/profile_db.hpp); job, when given, adds a multi-process
// job's processes and per-rank figures.
void write_profile(const AttributeResult& result, const std::string& path, ProgressObserver* observer = nullptr,
                   const JobTables* job = nullptr);

}  // namespace opprof
