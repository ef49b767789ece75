#pragma once
// Knobs of the tracer-log reader that tests and benchmarks reach into; the CLI and the engine use
// read_tracer_log from tracer_log.hpp.
#include <cstddef>
#include <string>

#include "opprof/ingest/tracer_log.hpp"

namespace opprof::detail {

struct TracerLogReadOptions {
  // Threads that decode the parts of the log; 0: one per core.
  unsigned threads = 0;
  // A part holds at least this many bytes of records: a smaller log is decoded by one thread. Tests shrink
  // it so that a small log is split.
  std::size_t min_part_bytes = std::size_t{16} << 20;
};

Timeline read_tracer_log(const std::string& path, const TracerLogReadOptions& options);

}  // namespace opprof::detail
