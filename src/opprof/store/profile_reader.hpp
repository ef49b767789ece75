#pragma once
// The read side of the profile database, for reports: opens a profile read-only, checks that it is an
// opprof profile of the schema version this build reads, and gives typed access to what reports show.
// Small tables (meta, coverage, metrics) are loaded when the file is opened; groups and kernels are
// queried on demand.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "opprof/job/figures.hpp"
#include "opprof/metrics/aggregate.hpp"

struct sqlite3;
namespace opprof::sqlite {
class Database;
}

namespace opprof {

// A row of the metrics table.
struct ProfileMetric {
  std::int64_t id = 0;
  std::string name;       // full ncu name with rollup
  std::string unit;       // base unit as ncu printed it
  std::string aggregate;  // sum | wmean | max
  std::string axis;       // bottleneck axis
  std::string reason;
  bool present = true;    // false: in the metric set but missing from the ncu CSV
  std::string weight;     // wmean: "duration" or the sum metric weighting it; "" otherwise
};

// A row of the anomalies table: a choice the engine made on its own, how often, and the first details.
struct ProfileAnomaly {
  std::string kind;  // fusion.graph_tie, align.greedy_fallback, ... (kAnomalyKindNames)
  std::uint64_t count = 0;
  std::vector<std::string> details;
};

// A row of kernel_view: one activity with its name and attribution. Unknown text reads as "".
struct ProfileKernel {
  std::int64_t id = 0;
  std::string kind;  // kernel | memcpy | memset
  std::string name;
  std::string mangled;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::string path;  // correlation | enclosure | fusion | none
  double confidence = 0;
  std::string op;
  std::string top_op;
  std::string module;
  std::string family;
  std::string reason;
  std::string opaque_backend;
};

// A row of ncu_rows: one kernel ncu replayed, and the timeline kernel it was matched to.
struct ProfileNcuRow {
  std::int64_t row = 0;                 // 0-based in ncu's invocation order
  std::int64_t ncu_id = 0;              // ncu's "ID" column
  std::int64_t matched_kernel_id = -1;  // kernels.id; -1 when unmatched
};

// Layer dedup as the profile records it (meta dedup.*, tables dedup_instances and dedup_verify).
struct ProfileDedup {
  bool active = false;  // false: pass B replayed every kernel (or a profile older than schema version 3)
  std::string mode, selection;
  std::uint64_t classes = 0, instances = 0, instances_in_full = 0, kernels = 0, kernels_replayed = 0,
                kernels_propagated = 0, kernels_without_source = 0;
  // Duplicates given the counters of a launch that did other work (a work variant ncu's launch count missed).
  std::uint64_t kernels_other_work = 0;
  int verify = 0;
  int launch_count = 0;  // per-launch-config selections: ncu's --launch-count (0: not recorded, or nvtx_modules)
  struct InFull {
    std::string instance, class_type, reason;
  };
  std::vector<InFull> in_full;  // duplicates whose kernels differ from their representative's (reason says what they got)
  struct Deviation {
    std::string metric;
    std::uint64_t pairs = 0;
    double median_rel = 0, max_rel = 0;
  };
  std::vector<Deviation> verify_deviation;  // --dedup-verify, per metric
  std::vector<std::string> notes;
};

// A row of processes (a multi-process job's process) with its rank_summary row when it has one.
struct ProfileProcess {
  std::int64_t id = 0;
  std::int64_t rank = kNoRank;  // NULL reads as kNoRank
  std::int64_t pid = 0;
  std::string folder, status, problem;
  bool has_summary = false;  // false for a process without a timeline
  RankFigures figures;       // figures.process is id
};

// A row of rank_groups: one operator's or module's kernel time on one process.
struct ProfileRankGroup {
  std::string key;
  std::int64_t process_id = 0;
  std::uint64_t kernels = 0;
  std::int64_t time_ns = 0;
};

// The collectives of one process that the trace described (collectives with a message size), grouped by
// collective, dtype and process group: how many and how many bytes.
struct ProfileCollectiveMessages {
  std::int64_t process_id = 0;
  std::string collective, dtype, process_group, process_group_desc;
  std::int64_t group_size = -1;  // NULL reads as -1
  std::int64_t count = 0, elements = 0, bytes = 0;
};

class ProfileReader {
 public:
  // Throws InputError when the file is missing, is not an SQLite database, is not an opprof profile,
  // or has a schema version outside kOldestReadableSchemaVersion..kProfileSchemaVersion.
  explicit ProfileReader(const std::string& path);
  ProfileReader(ProfileReader&&) noexcept;
  ProfileReader& operator=(ProfileReader&&) noexcept;
  ~ProfileReader();

  const std::string& path() const;
  int schema_version() const;

  // The meta table: profile facts, "timeline.*" facts of the capture, "ncu.*" facts of the replay.
  const std::map<std::string, std::string>& metadata() const;
  // One meta value, or fallback when the key is absent.
  std::string meta(std::string_view key, std::string_view fallback = "") const;

  // Coverage, with unattributed and opaque_backends filled from their tables.
  const Coverage& coverage() const;

  // Every row of the metrics table, by id (present ones first).
  const std::vector<ProfileMetric>& metrics() const;
  // Every row of the anomalies table, by kind; empty for a profile of schema version 1.
  const std::vector<ProfileAnomaly>& anomalies() const;
  // Index into metrics() of the metric of that name, or npos.
  std::size_t metric_index(std::string_view name) const;
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

  // Groups of one kind, largest kernel time first; limit 0 reads all. GroupStats::metric is parallel to
  // metrics(), NaN where the group has no value; derived figures are -1 where the database has NULL.
  std::vector<GroupStats> groups(GroupBy by, std::size_t limit = 0) const;
  std::size_t group_count(GroupBy by) const;

  // Kernel time (activities of kind kernel) grouped by an attribution column that has no group table:
  // kPhase (forward, backward, ...) or kSourceLine (the user source line of an Inductor kernel's FX node;
  // "" for kernels without one). Largest time first; only key, kernels, time_ns and time_share are set
  // (no counters: metric is empty, derived figures -1).
  enum class KernelColumn : std::uint8_t { kPhase, kSourceLine };
  std::vector<GroupStats> kernel_time_by(KernelColumn column) const;

  std::vector<std::string> match_notes() const;
  ProfileDedup dedup() const;
  std::size_t activity_count() const;  // rows of kernels: kernels, memcpy and memset
  // Calls fn for every activity, in timeline order.
  void for_each_kernel(const std::function<void(const ProfileKernel&)>& fn) const;
  // Every row of ncu_rows, by row; empty for a profile without ncu.
  std::vector<ProfileNcuRow> ncu_rows() const;

  // A multi-process job's processes by id; empty for a single-process profile.
  std::vector<ProfileProcess> processes() const;
  // rank_groups of one kind (operator | module), by key then process.
  std::vector<ProfileRankGroup> rank_groups(std::string_view group_kind) const;
  // The collectives whose message size the trace gave, grouped per process; empty before schema version 4.
  std::vector<ProfileCollectiveMessages> collective_messages() const;

  // The open connection, for queries the typed access does not cover. Read-only.
  sqlite3* handle() const;
  sqlite::Database& database() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace opprof
