#pragma once
// Reader for Nsight Systems reports exported with `nsys export --type sqlite`.
#include <cstdint>
#include <string>

#include "opprof/timeline/timeline.hpp"

namespace opprof {

// Reads the CUDA and NVTX tables of an nsys SQLite export into a Timeline:
//   CUPTI_ACTIVITY_KIND_KERNEL           -> kernels (name = demangledName, mangled = mangledName; ids into StringIds)
//   CUPTI_ACTIVITY_KIND_MEMCPY / MEMSET  -> kernels of kind kMemcpy / kMemset
//   CUPTI_ACTIVITY_KIND_RUNTIME / DRIVER -> launches, only calls whose correlation id has GPU activity (plus
//                                           cudaProfilerStart/Stop), so the table stays the size of the work
//   NVTX_EVENTS eventType 59 (push/pop)  -> thread ranges with depth by nesting per thread
//   NVTX_EVENTS eventType 60 (start/end) -> thread ranges, depth -1; eventType 75 names domains
// globalTid / globalPid carry pid = (id >> 24) & 0xFFFFFF and tid = id & 0xFFFFFF. Tables and columns missing
// from a given export (no NVTX, no memcpy, an older nsys without graphId) are skipped. Range kinds follow
// classify_nvtx_range. Metadata: "source"="nsys-sqlite", "device.<i>.name" / "num_sms" from TARGET_INFO_GPU.
// Throws InputError on a missing file or a database that is not an nsys export.
Timeline read_nsys_sqlite(const std::string& path);

// The process and thread ids nsys packs into globalTid / globalPid.
inline std::uint32_t nsys_pid(std::int64_t global_id) {
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(global_id) >> 24) & 0xFFFFFFu);
}
inline std::uint32_t nsys_tid(std::int64_t global_id) {
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(global_id) & 0xFFFFFFu);
}

}  // namespace opprof
