#pragma once
// A multi-process job (torchrun's ranks, a launcher's children) attributed into one profile: each
// process's capture folder (job/processes.hpp) is attributed on its own (its timeline, its Inductor files,
// the rows of the job's ncu CSV that its pass-B process wrote), then the processes' profiles are merged
// into one with the process's pid, and so its rank, on every kernel, launch and range; aggregates and
// coverage are the job's. A process whose timeline is missing or unreadable is reported and the others
// are still attributed.
#include <string>
#include <vector>

#include "opprof/job/figures.hpp"
#include "opprof/job/processes.hpp"
#include "opprof/pipeline/attribute.hpp"

namespace opprof {

struct JobRequest {
  std::string dir;         // the capture directory holding rank<R>/ and pid<P>/ folders
  std::string trace_file;  // the timeline's name in each folder (trace.opprof, trace.json); "" for either
  // The rest as for one process: ncu is the job's CSV (every process's rows, by "Process ID"), output the
  // database; trace and inductor are found per process.
  AttributeRequest request;
  // Cross-rank dedup (docs/dedup.md): the ranks pass B replayed, the representative first; the others take
  // its counters kernel by kernel. Empty: as the ranks' counters records say (the ranks whose pass B
  // opened ncu's range, when some did not), else every process was replayed.
  std::vector<std::int64_t> counters_ranks;
  // counters_ranks is opprof profile's own plan, not the user's word: a representative left without ncu rows
  // is pass B's failure (warned, nothing propagated), not an input error.
  bool counters_ranks_planned = false;
};

struct JobResult {
  AttributeResult profile;  // the merged profile
  JobTables job;            // processes (with their status) and per-rank figures
};

// Throws InputError when dir holds no process folder or no process has a timeline that can be attributed.
JobResult attribute_job(const JobRequest& request, ProgressObserver* observer = nullptr);

}  // namespace opprof
