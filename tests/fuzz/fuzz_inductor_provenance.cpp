// Inductor's inductor_provenance_tracking_node_mappings.json, beside a fixed output_code.py (a graph
// directory needs one) that names a kernel handle of the mappings.
#include "fuzz_input.hpp"
#include "opprof/ingest/inductor.hpp"

namespace {
constexpr char kOutputCode[] =
    "# AOT ID: ['0_forward']\n"
    "def call(args):\n"
    "        # Topologically Sorted Source Nodes: [linear], Original ATen: [aten.addmm]\n"
    "        # [Provenance debug handles] triton_poi_fused_0:1\n"
    "        triton_poi_fused_0.run(buf0, 16, stream=stream0)\n";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string code = opprof::fuzz::write_input(
      "graph/output_code.py", reinterpret_cast<const std::uint8_t*>(kOutputCode), sizeof kOutputCode - 1);
  const std::string json =
      opprof::fuzz::write_input("graph/inductor_provenance_tracking_node_mappings.json", data, size);
  opprof::fuzz::expect_input_error_at_most(
      [&] { (void)opprof::read_inductor_artifacts((opprof::fuzz::scratch_dir() / "graph").string()); });
  return 0;
}
