// The opprof tracer's binary log (agents/tracer_log/format.hpp).
#include "fuzz_input.hpp"
#include "opprof/ingest/tracer_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = opprof::fuzz::write_input("trace.opprof", data, size);
  opprof::fuzz::expect_input_error_at_most([&] { (void)opprof::read_tracer_log(path); });
  return 0;
}
