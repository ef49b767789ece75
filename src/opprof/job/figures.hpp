#pragma once
// The per-rank and across-rank figures of a job's profile: each process's kernel time by phase, its
// communication and how much of it ran while the process's computation kernels ran (overlap on the GPU
// timeline of that process), the time per operator and module per rank, and every collective.
#include <cstdint>
#include <string>
#include <vector>

#include "opprof/attribute/attribution.hpp"
#include "opprof/job/processes.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

struct RankFigures {
  std::size_t process = 0;             // index into the job's processes
  std::uint64_t kernels = 0;           // activities of kind kernel
  std::int64_t kernel_time_ns = 0;     // their summed durations
  double time_vs_mean = 0;             // kernel_time_ns / the mean over the job's processes (1: balanced)
  std::int64_t compute_ns = 0;         // kernels outside the communication phase
  std::int64_t communication_kernel_ns = 0;  // NCCL kernels (kernel time of the communication phase), summed
  std::int64_t communication_copy_ns = 0;    // copies and fills inside collectives (gloo's), summed: not kernel time
  std::int64_t communication_ns = 0;         // the union of both: GPU time with communication on the device
  // Of that union, the time during which a computation kernel of the same process ran.
  std::int64_t overlap_ns = 0;
  std::int64_t exposed_communication_ns = 0;  // the rest of that union: communication nothing else hid
  std::int64_t cpu_communication_ns = 0;  // union of the collectives' CPU ranges (gloo reduces on the CPU)
  std::int64_t cpu_overlap_ns = 0;        // ... during which a computation kernel of the process ran
  std::int64_t busy_ns = 0;               // union of all its activities on the GPU
  // The measured step's wall time: the earliest start to the latest end of its GPU activities and its
  // collectives' CPU ranges.
  std::int64_t span_ns = 0;
  std::int64_t by_phase_ns[kPhases] = {};  // kernel time per phase
};

struct RankGroupTime {  // time of one operator or module on one rank
  std::string group_kind;  // operator | module
  std::string key;         // as in the operators / modules tables
  std::size_t process = 0;
  std::uint64_t kernels = 0;
  std::int64_t time_ns = 0;
};

struct Collective {  // one communication activity or CPU range
  std::size_t process = 0;
  std::string source;      // kernel (an NCCL kernel or a copy inside a collective) | cpu_range
  std::string collective;  // allreduce, AllReduce, all_reduce, ... ("" when only the phase is known)
  std::uint32_t kernel_id = kNoIndex;  // the activity (source kernel)
  // cpu_range: the range itself; kernel: the collective range it was launched in, when the trace described
  // one around its operator (a gloo:all_reduce around gloo's copies, an NCCL kernel's record_param_comms).
  std::uint32_t range_id = kNoIndex;
  std::int64_t start_ns = 0, end_ns = 0;
  // What the trace says about it (a cpu_range's CommunicationArgs; a kernel's are its range_id's row): its
  // input tensors' elements and bytes (-1 unknown), their dtype, and its process group. The group is also
  // the process's only one when the collective names none.
  std::int64_t elements = -1, bytes = -1;
  std::string dtype{};
  std::string process_group{}, process_group_desc{};
  std::int32_t group_size = -1;
};

struct JobFigures {
  std::vector<RankFigures> ranks;  // one per attributed process (ok, truncated), in the processes' order
  std::vector<RankGroupTime> groups;
  std::vector<Collective> collectives;
};

// tl is the job's merged timeline; processes[i].pid is the pid its rows carry.
JobFigures compute_job_figures(const Timeline& tl, const AttributionTable& attr, const std::vector<JobProcess>& processes);

// The measure of the union of intervals, and of the part of a's union that b's union covers.
std::int64_t union_ns(std::vector<std::pair<std::int64_t, std::int64_t>> intervals);
std::int64_t covered_ns(std::vector<std::pair<std::int64_t, std::int64_t>> a, std::vector<std::pair<std::int64_t, std::int64_t>> b);

}  // namespace opprof
