#pragma once
// The profile database: SQLite, one versioned schema (docs/schema.md), written atomically. Every report
// reads only this file.
#include <map>
#include <cstdint>
#include <string>
#include <vector>

#include "contract/opprof_contract.h"
#include "opprof/anomaly/anomalies.hpp"
#include "opprof/attribute/attribution.hpp"
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
// with its version (attribute it again).
inline constexpr int kOldestReadableSchemaVersion = 3;
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

}  // namespace opprof
