#pragma once
// Knobs and pieces of the Kineto reader that tests and benchmarks reach into; the CLI and the engine use
// read_kineto_trace from kineto.hpp.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "opprof/ingest/chunked_input.hpp"
#include "opprof/ingest/kineto.hpp"

namespace opprof::detail {

struct KinetoReadOptions {
  // Bytes read from the file per refill. Tests shrink it so that events straddle chunk boundaries.
  std::size_t chunk_bytes = std::size_t{4} << 20;
  // How often the progress callback is called, in bytes read.
  std::uint64_t progress_every_bytes = std::uint64_t{64} << 20;
  // How the file is read: mapped (plain files larger than a chunk), read ahead on a helper thread (and
  // gunzipped there) while events are parsed, or read chunk by chunk.
  InputAccess access = InputAccess::kMap;
  // Threads that parse the events and merge them into the timeline in file order (the reading thread only
  // cuts them); 0: one per core.
  unsigned parse_threads = 0;
};

Timeline read_kineto_trace(const std::string& path, const KinetoReadOptions& options, KinetoReadStats* stats,
                           const ReadProgress& progress);

// A trace time in microseconds, as torch.profiler writes "ts" and "dur" (5104156394367.444), converted to
// integer nanoseconds exactly from the number's text: through a double the last digit of such a timestamp
// would be lost. Decimals past the third round half away from zero; exponents go through a double.
// nullopt when the text is not a JSON number or the result does not fit.
std::optional<std::int64_t> parse_trace_us_as_ns(std::string_view text);

}  // namespace opprof::detail
