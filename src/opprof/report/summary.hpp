#pragma once
// What the terminal and JSON reports show, computed once from a profile database so that both print the
// same numbers: coverage, the top operators and modules with a few key counters, warnings about the
// capture, and ncu matching.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "opprof/metrics/aggregate.hpp"
#include "opprof/report/module_tree.hpp"
#include "opprof/report/text_table.hpp"
#include "opprof/store/profile_reader.hpp"

namespace opprof {

// What the report's main table groups kernel time by (`opprof report --by`).
enum class ReportBy : std::uint8_t { kOperator, kModule, kFamily, kSourceLine, kPhase };
inline constexpr std::array<const char*, 5> kReportByNames = {"operator", "module", "family", "source-line", "phase"};
inline const char* to_string(ReportBy b) { return kReportByNames[static_cast<std::size_t>(b)]; }
// The ReportBy of a name in kReportByNames; throws InputError for another.
ReportBy report_by_from_string(std::string_view name);

struct ReportOptions {
  std::size_t top = 10;           // rows of each table (and module tree nodes) listed; 0 lists all
  std::size_t unattributed = 10;  // unattributed groups the terminal report lists (JSON lists all); 0: all
  ReportBy by = ReportBy::kOperator;  // the terminal report's main table; JSON lists every breakdown
  int depth = 3;                  // module tree levels shown (0: all)
  std::string module_prefix;      // only this module's subtree ("" : the whole tree)
  std::size_t width = 100;        // terminal: columns every line fits in (at least kMinReportWidth)
  bool color = false;             // terminal: ANSI colour
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

// GroupStats::bottleneck_why in its parts (docs/schema.md: the figures that decided the class, the
// others, and the advice after "Next:").
struct BottleneckText {
  std::string reason;   // the figures that decided the class
  std::string figures;  // the other figures
  std::string advice;   // what to look at next
};
BottleneckText split_bottleneck_why(std::string_view why);

struct ReportSummary {
  std::string path;
  int schema_version = 0;
  std::map<std::string, std::string> metadata;
  Coverage coverage;
  std::vector<GroupLine> operators;  // the top ones, largest time first
  std::vector<GroupLine> modules;   // module paths as attributed: self time of each
  std::vector<GroupLine> families;  // kernel families
  std::vector<GroupLine> source_lines;  // kernel time only (no counters); "" for kernels without a line
  std::vector<GroupLine> phases;        // kernel time only (no counters)
  ModuleTree module_tree;           // every module path and its prefixes, inclusive and self time
  std::size_t operator_count = 0;    // all operators in the profile
  std::size_t module_count = 0;
  std::size_t family_count = 0;
  std::size_t source_line_count = 0;
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
