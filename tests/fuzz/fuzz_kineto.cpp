// torch.profiler (Kineto) Chrome-trace JSON, through the streaming reader.
#include "fuzz_input.hpp"
#include "opprof/ingest/kineto.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = opprof::fuzz::write_input("trace.json", data, size);
  opprof::fuzz::expect_input_error_at_most([&] { (void)opprof::read_kineto_trace(path); });
  return 0;
}
