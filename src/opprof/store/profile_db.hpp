#pragma once
// The profile database: SQLite, one versioned schema (docs/schema.md), written atomically. Every report
// reads only this file.
#include <map>
#include <string>

#include "opprof/attribute/attribution.hpp"
#include "opprof/ingest/ncu_csv.hpp"
#include "opprof/match/ncu_match.hpp"
#include "opprof/metrics/aggregate.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

inline constexpr int kProfileSchemaVersion = 1;

struct ProfileInputs {
  const Timeline* timeline = nullptr;
  const AttributionTable* attribution = nullptr;
  const Aggregates* aggregates = nullptr;
  const Coverage* coverage = nullptr;
  const KernelMetrics* kernel_metrics = nullptr;  // null without ncu
  const NcuTable* ncu = nullptr;                  // null without ncu
  const NcuMatch* match = nullptr;                // null without ncu
  std::map<std::string, std::string> metadata;    // capture facts: inputs, opprof version, created_at, ...
};

// Writes the database to path. The file appears only complete: it is built under a temporary name in
// the same directory and renamed over path at the end; on any failure the temporary is removed, path
// is left as it was, and OutputError is thrown.
void write_profile_db(const std::string& path, const ProfileInputs& in);

}  // namespace opprof
