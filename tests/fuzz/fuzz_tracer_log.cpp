// The opprof tracer's binary log (agents/tracer_log/format.hpp), read in one part and split into parts on
// several threads: both reads end alike (the same rows, or an error at the same byte).
#include <cstdlib>
#include <string>

#include "fuzz_input.hpp"
#include "opprof/ingest/tracer_log_detail.hpp"

namespace {

// What a read ended with: its row counts, or the byte of its error.
std::string outcome(const std::string& path, unsigned threads, std::size_t min_part_bytes) {
  opprof::detail::TracerLogReadOptions options;
  options.threads = threads;
  options.min_part_bytes = min_part_bytes;
  std::string result;
  opprof::fuzz::expect_input_error_at_most([&] {
    try {
      const opprof::Timeline tl = opprof::detail::read_tracer_log(path, options);
      result = std::to_string(tl.kernels.size()) + " " + std::to_string(tl.launches.size()) + " " +
               std::to_string(tl.ranges.size());
    } catch (const opprof::InputError& e) {
      result = "error at byte " + std::to_string(e.position().byte_offset);
      throw;  // the message is checked there
    }
  });
  return result;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = opprof::fuzz::write_input("trace.opprof", data, size);
  if (outcome(path, 1, std::size_t{16} << 20) != outcome(path, 3, 1)) std::abort();
  return 0;
}
