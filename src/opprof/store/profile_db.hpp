#pragma once
// The profile database: SQLite, one versioned schema (docs/schema.md), written atomically. Every report
// reads only this file.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "contract/opprof_contract.h"
#include "opprof/anomaly/anomalies.hpp"
#include "opprof/attribute/attribution.hpp"
#include "opprof/dedup/dedup_plan.hpp"
#include "opprof/dedup/propagation.hpp"
#include "opprof/ingest/ncu_csv.hpp"
#include "opprof/job/figures.hpp"
#include "opprof/job/processes.hpp"
#include "opprof/match/ncu_match.hpp"
#include "opprof/metrics/aggregate.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

inline constexpr int kProfileSchemaVersion = OPPROF_PROFILE_SCHEMA_VERSION;
// The oldest version the reader reads: version 3 added the rank of every row, the processes of a
// multi-process job with their per-rank tables, and the communication phase; an older profile is refused
// with its version (attribute it again). Version 4 added the collectives' arguments, NULL in a version 3.
inline constexpr int kOldestReadableSchemaVersion = OPPROF_PROFILE_OLDEST_READABLE_SCHEMA_VERSION;
// PRAGMA application_id of every profile: "oppf". The reader refuses SQLite files without it.
inline constexpr std::int64_t kProfileApplicationId = OPPROF_PROFILE_APPLICATION_ID;

// A multi-process job's tables: its processes (the rank of every row comes from its pid) and figures.
struct JobTables {
  std::vector<JobProcess> processes;
  JobFigures figures;
};

struct ProfileInputs {
  const Timeline* timeline = nullptr;
  const AttributionTable* attribution = nullptr;
  const Aggregates* aggregates = nullptr;
  const Coverage* coverage = nullptr;
  const KernelMetrics* kernel_metrics = nullptr;  // null without ncu
  const NcuTable* ncu = nullptr;                  // null without ncu
  const NcuMatch* match = nullptr;                // null without ncu
  const Anomalies* anomalies = nullptr;          // choices the engine made on its own; null for none
  const DedupPlan* dedup = nullptr;               // layer dedup's plan; null without
  const PropagationResult* propagation = nullptr;
  const std::vector<MetricDeviation>* dedup_deviation = nullptr;
  std::map<std::string, std::string> metadata;    // capture facts: inputs, opprof version, created_at, ...
  // When set (one entry per timeline range), operator ranges whose entry is 0 are not written: a trace
  // holds millions of operator ranges that launched nothing. Other kinds are always written; row ids
  // stay the timeline's range indices either way.
  const std::vector<std::uint8_t>* operator_ranges_to_keep = nullptr;
  const JobTables* job = nullptr;  // null for a single-process profile
};

// Writes the database to path. The file appears only complete: it is built under a temporary name in
// the same directory and renamed over path at the end; on any failure the temporary is removed, path
// is left as it was, and OutputError is thrown.
void write_profile_db(const std::string& path, const ProfileInputs& in);

// Of a background write (below): more attribution rows than this go in parts.
inline constexpr std::size_t kAttributionRowsPerPart = std::size_t{1} << 20;

// The same in two steps, so that the database write overlaps attribution: the constructor creates the
// temporary file and writes the tables the timeline alone fills (kernels, kernel names, launches), on a
// helper thread when background is set, reading the strings from a snapshot (attribution may intern
// more meanwhile; it must not change the kernel and launch tables). finish() writes the rest and publishes
// the file; with background set it writes the attribution rows on a second thread into temporary
// databases of their own beside the profile's, while this thread writes the ranges, and then copies them
// in: one database where there are up to rows_per_part rows, else up to four of consecutive kernels'
// rows, each copied in as soon as it is written. Without finish() the destructor removes the
// temporaries. Throws OutputError as above.
class ProfileDbWriter {
 public:
  ProfileDbWriter(const std::string& path, const Timeline& timeline, bool background,
                  std::size_t rows_per_part = kAttributionRowsPerPart);
  ~ProfileDbWriter();
  ProfileDbWriter(const ProfileDbWriter&) = delete;
  ProfileDbWriter& operator=(const ProfileDbWriter&) = delete;
  // in.timeline must be the timeline given to the constructor.
  void finish(const ProfileInputs& in);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace opprof
