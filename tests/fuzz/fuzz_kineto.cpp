// torch.profiler (Kineto) Chrome-trace JSON, through the streaming reader: with its default chunks (an input
// this small is read in one block) and with 256-byte chunks of the mapped file, where events straddle the
// window's growth and batches view the mapping.
#include "fuzz_input.hpp"
#include "opprof/ingest/kineto.hpp"
#include "opprof/ingest/kineto_detail.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = opprof::fuzz::write_input("trace.json", data, size);
  opprof::fuzz::expect_input_error_at_most([&] { (void)opprof::read_kineto_trace(path); });
  opprof::detail::KinetoReadOptions mapped;
  mapped.chunk_bytes = 256;
  mapped.access = opprof::detail::InputAccess::kMap;
  opprof::fuzz::expect_input_error_at_most(
      [&] { (void)opprof::detail::read_kineto_trace(path, mapped, nullptr, {}); });
  return 0;
}
