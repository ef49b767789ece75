// Inductor's output_code.py: the wrapper's calls, their provenance handles and source-node comments.
#include "fuzz_input.hpp"
#include "opprof/ingest/inductor.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)opprof::fuzz::write_input("graph/output_code.py", data, size);
  opprof::fuzz::expect_input_error_at_most(
      [&] { (void)opprof::read_inductor_artifacts((opprof::fuzz::scratch_dir() / "graph").string()); });
  return 0;
}
