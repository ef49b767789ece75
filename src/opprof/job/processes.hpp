#pragma once
// The processes of a multi-process job (torchrun's ranks, a launcher's children) as their capture folders
// show them: `opprof profile` gives each process its own folder in the capture directory, rank<R>/ (RANK,
// else LOCAL_RANK, in the process's environment) or pid<P>/, holding its timeline, its capture records
// (capture.json for pass A, capture_counters.json for pass B) and its Inductor debug files.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace opprof {

inline constexpr std::int64_t kNoRank = -1;

// Whether a process's pass B opened ncu's range, as its counters record says (window_info.backend): a rank
// left out by cross-rank dedup (OPPROF_COUNTERS_RANKS) runs with a window that records nothing.
enum class CountersWindow : std::uint8_t { kUnknown, kOpened, kNotOpened };

struct JobProcess {
  std::string folder;                 // "rank0", "pid4242"; "" for the one process of a single-process profile
  std::int64_t rank = kNoRank;        // from the folder's name, else the capture record
  std::int64_t local_rank = kNoRank;
  std::int64_t world_size = kNoRank;  // as the launcher told the process
  std::uint32_t pid = 0;              // pass A's process (its capture record, else the folder's name)
  std::uint32_t counters_pid = 0;     // pass B's process of the same rank (ncu's "Process ID"), 0 when unknown
  CountersWindow counters_window = CountersWindow::kUnknown;
  std::string trace;                  // the timeline file, "" when the folder has none
  std::string inductor;               // the Inductor debug directory, "" when none
  // ok; truncated (the log ends inside a record or without its trailer: read up to there); missing (no
  // timeline: the process never wrote one, or a rank of the world size has no folder); failed (unreadable);
  // idle (a timeline without GPU activity: a launcher process that initialized CUDA).
  std::string status = "ok";
  std::string problem;                // what is wrong, "" when nothing
  std::uint64_t kernels = 0;          // activities of kind kernel attributed for it
  std::uint64_t ncu_rows = 0;         // ncu rows of its pass-B process

  std::string label() const;  // "rank 1", "pid 4242"
};

// The process folders of a capture directory, ranks first (by rank), then the others by pid. trace_file is
// the timeline's file name in each folder (trace.opprof, trace.json). Ranks below the largest world size a
// record names that have no folder are listed with status missing. Empty when dir has no process folder.
// An empty trace_file looks for the tracer's log, then torch.profiler's trace.
std::vector<JobProcess> find_job_processes(const std::filesystem::path& dir, std::string_view trace_file);

}  // namespace opprof
