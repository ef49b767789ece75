#pragma once
// `opprof export profile.db --perfetto out.json`: the profile as a Chrome trace-event JSON file, which
// ui.perfetto.dev (and chrome://tracing) opens. Read from the profile database only:
//   - one process per GPU ("GPU <device> (<name>)"), one track per stream with its kernels, memcpys and
//     memsets, each labelled with its operator, module and phase (args, and the phase as category);
//     ranges projected onto a stream on a track of their own beside it ("stream N ranges");
//   - the CPU processes with their threads: every launch API call and every stored range (operators,
//     modules, annotations) as slices;
//   - a flow arrow from each launch to each kernel it launched (same process and correlation id);
//   - counter tracks per GPU for every ncu percentage metric (% of peak, hit rates): the kernel's value
//     from its start to its end, 0 between kernels.
// Timestamps are microseconds (the format's unit) with nanosecond digits, on the capture's own clock.
#include <string>

#include "opprof/store/profile_reader.hpp"

namespace opprof {

// Chrome trace-event process ids of the GPUs and track ids of their range tracks: above any real pid
// (Linux caps them at 2^22) and stream id, so that a GPU never shares a process with a CPU process.
inline constexpr std::int64_t kPerfettoGpuPidBase = std::int64_t{1} << 30;
inline constexpr std::int64_t kPerfettoStreamRangeTidBase = std::int64_t{1} << 30;

struct PerfettoExportStats {
  std::size_t kernels = 0;   // GPU activities written (kernels, memcpy, memset)
  std::size_t launches = 0;
  std::size_t ranges = 0;
  std::size_t flows = 0;
  std::size_t counter_events = 0;
};

// Writes the trace to path atomically; throws OutputError when it cannot.
PerfettoExportStats export_perfetto(const ProfileReader& profile, const std::string& path);

}  // namespace opprof
