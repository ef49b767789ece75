#include "opprof/ingest/timeline_source.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "opprof/ingest/nsys_sqlite.hpp"
#include "opprof/ingest/tracer_log.hpp"
#include "tracer_log/format.hpp"
#include "opprof/util/error.hpp"

namespace opprof {

const char* to_string(TimelineFormat f) {
  switch (f) {
    case TimelineFormat::kTracerLog: return "opprof tracer log";
    case TimelineFormat::kNsysSqlite: return "Nsight Systems SQLite export";
    case TimelineFormat::kKinetoJson: return "Kineto JSON";
    case TimelineFormat::kKinetoGzip: return "Kineto JSON (gzip)";
  }
  return "unknown";
}

TimelineFormat sniff_timeline_format(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open the trace file");
  char head[16] = {};
  in.read(head, sizeof head);
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got >= sizeof tracelog::kMagic && std::memcmp(head, tracelog::kMagic, sizeof tracelog::kMagic) == 0)
    return TimelineFormat::kTracerLog;
  // The SQLite header string includes its terminating NUL: 16 bytes.
  static constexpr char kSqlite[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f', 'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};
  if (got == sizeof kSqlite && std::memcmp(head, kSqlite, sizeof kSqlite) == 0) return TimelineFormat::kNsysSqlite;
  if (got >= 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b)
    return TimelineFormat::kKinetoGzip;
  return TimelineFormat::kKinetoJson;
}

Timeline read_timeline(const std::string& path, KinetoReadStats* stats, const ReadProgress& progress,
                       TimelineFormat* format) {
  const TimelineFormat f = sniff_timeline_format(path);
  if (format != nullptr) *format = f;
  if (f == TimelineFormat::kKinetoJson || f == TimelineFormat::kKinetoGzip) return read_kineto_trace(path, stats, progress);
  Timeline tl = f == TimelineFormat::kTracerLog ? read_tracer_log(path) : read_nsys_sqlite(path);
  if (stats != nullptr) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    stats->bytes = ec ? 0 : static_cast<std::uint64_t>(size);
    stats->events = tl.kernels.size() + tl.launches.size() + tl.ranges.size();
  }
  if (progress) progress(stats != nullptr ? stats->bytes : 0, stats != nullptr ? stats->bytes : 0);
  return tl;
}

}  // namespace opprof
