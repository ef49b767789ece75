// Nsight Compute's `--csv --page raw --print-units base` output.
#include "fuzz_input.hpp"
#include "opprof/ingest/ncu_csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = opprof::fuzz::write_input("ncu.csv", data, size);
  opprof::fuzz::expect_input_error_at_most([&] { (void)opprof::read_ncu_csv(path); });
  return 0;
}
