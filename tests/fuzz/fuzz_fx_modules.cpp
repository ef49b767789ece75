// opprof_fx_modules.json (pre-grad FX node -> module), written by python/opprof, beside one graph directory.
#include "fuzz_input.hpp"
#include "opprof/ingest/inductor.hpp"

namespace {
constexpr char kOutputCode[] = "def call(args):\n    triton_poi_fused_0.run(buf0, 16, stream=stream0)\n";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string code = opprof::fuzz::write_input(
      "capture/graph/output_code.py", reinterpret_cast<const std::uint8_t*>(kOutputCode), sizeof kOutputCode - 1);
  (void)opprof::fuzz::write_input("capture/opprof_fx_modules.json", data, size);
  opprof::fuzz::expect_input_error_at_most(
      [&] { (void)opprof::read_inductor_artifacts((opprof::fuzz::scratch_dir() / "capture").string()); });
  return 0;
}
