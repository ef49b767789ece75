#pragma once
// What the terminal and JSON reports show, computed once from a profile database so that both print the
// same numbers: coverage, the top operators and modules with a few key counters, warnings about the
// capture, and ncu matching.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "opprof/metrics/aggregate.hpp"
#include "opprof/report/module_tree.hpp"
#include "opprof/store/profile_reader.hpp"

namespace opprof {

struct ReportOptions {
  std::size_t top = 10;           // operators and modules listed; 0 lists all
  std::size_t unattributed = 10;  // unattributed groups the terminal report lists (JSON lists all); 0: all
  std::size_t name_width = 40;    // terminal: width of the operator and module column
};

// The counters a reader scans first, as % of peak; NaN when the profile has no such counter for the group.
struct KeyCounters {
  double sm_pct;         // sm__throughput: compute-bound when high
  double dram_pct;       // dram__throughput: memory-bound when high
  double tensor_pct;     // tensor pipe activity: near 0 for a GEMM means idle tensor cores
  double occupancy_pct;  // sm__warps_active: achieved occupancy
};

struct GroupLine {
  GroupStats stats;
  double time_pct = 0;  // of all kernel time
  KeyCounters counters{};
};

struct ReportSummary {
  std::string path;
  int schema_version = 0;
  std::map<std::string, std::string> metadata;
  Coverage coverage;
  std::vector<GroupLine> operators;  // the top ones, largest time first
  std::vector<GroupLine> modules;   // module paths as attributed: self time of each
  ModuleTree module_tree;           // every module path and its prefixes, inclusive and self time
  std::vector<GroupLine> families;  // kernel families, the top ones as for operators
  std::size_t operator_count = 0;    // all operators in the profile
  std::size_t module_count = 0;
  std::vector<std::string> missing_metrics;  // in the metric set, absent from the ncu CSV
  std::vector<std::string> match_notes;
  std::vector<ProfileAnomaly> anomalies;     // choices the engine made on its own, by kind
  std::vector<std::string> warnings;         // one sentence each
};

ReportSummary summarize_profile(const ProfileReader& profile, const ReportOptions& options);

// Metadata keys the reports understand (docs/schema.md): "clocks_locked" (true/false, profile or
// timeline level) and "ncu.clock_control" (base/none).
bool metadata_says_false(std::string_view value);

}  // namespace opprof
