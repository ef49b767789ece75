#pragma once
// Decisions the engine takes on its own where the inputs leave a choice (a tie, a size limit, missing
// evidence), counted rather than only logged, as Kineto counts its anomalies: each becomes a row of the
// profile's anomalies table (docs/schema.md) and a line of the report, so a figure that rests on one can
// be told from a figure that does not.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "opprof/util/enum_names.hpp"

namespace opprof {

enum class AnomalyKind : std::uint8_t {
  // Several compiled graphs shared the most kernel names with a region's launches; the first one was used.
  kFusionGraphTie = 0,
  // Two sequences were too far apart (or too long) to align exactly; they were matched greedily in order.
  kAlignGreedyFallback = 1,
  // A kernel without a grid or block on one side: the ncu identities of its process compare names alone.
  kNcuMatchByNameOnly = 2,
  // The ncu and timeline kernel sequences of a process were too far apart to align: each identity's k-th
  // row was paired with its k-th kernel, without checking the order across identities.
  kNcuPairedByOccurrence = 3,
  // Several FX module maps knew the same, largest number of a graph's nodes; the first one was used.
  kFusionModuleMapTie = 4,
};
// The names the anomalies table and the reports use.
inline constexpr std::array<const char*, 5> kAnomalyKindNames = {
    "fusion.graph_tie", "align.greedy_fallback", "ncu.match_by_name_only", "ncu.paired_by_occurrence",
    "fusion.module_map_tie"};
static_assert(kAnomalyKindNames.size() == static_cast<std::size_t>(AnomalyKind::kFusionModuleMapTie) + 1,
              "one name per AnomalyKind");
inline const char* to_string(AnomalyKind k) { return enum_name(kAnomalyKindNames, k); }
inline std::optional<AnomalyKind> parse_anomaly_kind(std::string_view name) {
  return enum_from_name<AnomalyKind>(kAnomalyKindNames, name);
}

class Anomalies {
 public:
  // Details kept per kind: the first few say what happened; the count says how often.
  static constexpr std::size_t kMaxDetails = 8;

  struct Entry {
    std::uint64_t count = 0;
    std::vector<std::string> details;  // the first kMaxDetails occurrences' details, in order
  };

  void record(AnomalyKind kind, std::string detail);
  // Adds another set's counts and details (a job's processes), each detail after prefix.
  void add(const Anomalies& other, std::string_view prefix);
  const Entry& operator[](AnomalyKind kind) const { return entries_[static_cast<std::size_t>(kind)]; }
  std::uint64_t count(AnomalyKind kind) const { return (*this)[kind].count; }
  bool empty() const;

 private:
  std::array<Entry, kAnomalyKindNames.size()> entries_;
};

}  // namespace opprof
