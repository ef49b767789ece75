#pragma once
// One entry point for every timeline format opprof reads, chosen by the file's content, not its name:
// `opprof attribute --trace` and `opprof profile` accept whatever the capture backend wrote.
#include <cstdint>
#include <string>

#include "opprof/ingest/kineto.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

enum class TimelineFormat : std::uint8_t {
  kTracerLog,   // libopprof_tracer.so's binary log: magic "OPPROFTR"
  kNsysSqlite,  // nsys export --type sqlite: "SQLite format 3\0"
  kKinetoJson,  // torch.profiler Chrome trace, plain JSON
  kKinetoGzip,  // the same, gzip-compressed (1f 8b)
};

inline constexpr std::array<const char*, 4> kTimelineFormatNames = {"opprof tracer log", "Nsight Systems SQLite export",
                                                                    "Kineto JSON", "Kineto JSON (gzip)"};
static_assert(kTimelineFormatNames.size() == static_cast<std::size_t>(TimelineFormat::kKinetoGzip) + 1);
inline const char* to_string(TimelineFormat f) { return enum_name(kTimelineFormatNames, f); }

// Reads the first bytes of `path` and names its format. Anything that is neither a tracer log, an SQLite
// database nor gzip is taken for JSON (its reader reports where it stops being JSON).
// Throws InputError when the file cannot be opened.
TimelineFormat sniff_timeline_format(const std::string& path);

// Reads `path` with the reader of its format. `stats` and `progress` concern the Kineto reader only (the
// tracer log is mapped and the SQLite database queried: both are read in one go); for the other formats
// stats->bytes is the file size and stats->events the number of activities, launches and ranges.
Timeline read_timeline(const std::string& path, KinetoReadStats* stats = nullptr, const ReadProgress& progress = {},
                       TimelineFormat* format = nullptr);

}  // namespace opprof
