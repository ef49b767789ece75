// The engine on real tracer logs from an H200 (tests/fixtures/tracer/README.md).
#include <gtest/gtest.h>

#include "opprof/pipeline/attribute.hpp"

using namespace opprof;

namespace {
std::string fixture(const std::string& name) { return std::string(OPPROF_FIXTURES_DIR) + "/tracer/" + name; }
}  // namespace

TEST(GoldenTracer, PlainCudaProgramKernelsAreAttributedToItsNvtxRanges) {
  AttributeRequest request;
  request.trace = fixture("cuda_nvtx_example.opprof");
  const AttributeResult r = attribute_capture(request);
  const Timeline& tl = r.timeline();
  const AttributionTable& a = r.attribution;
  const Coverage& c = r.coverage;
  EXPECT_EQ(c.kernels, 16u);
  EXPECT_DOUBLE_EQ(c.pct(c.attributed_ns), 100.0);
  std::size_t matmul = 0, replayed = 0;
  for (std::size_t k = 0; k < tl.kernels.size(); ++k) {
    if (tl.kernels.kind[k] != ActivityKind::kKernel) continue;
    matmul += tl.str(a.op[k]) == "matmul";
    if (tl.kernels.graph_id[k] != kNoGraph) {
      ++replayed;
      EXPECT_EQ(a.path[k], AttributionPath::kEnclosure);  // through the ranges active when its node was captured
    }
  }
  EXPECT_EQ(matmul, 3u);
  EXPECT_EQ(replayed, 6u);
}

TEST(GoldenTracer, CudaGraphReplaysLeadBackToTheirCaptureRanges) {
  AttributeRequest request;
  request.trace = fixture("gpt2_reduce_overhead.opprof");
  const AttributeResult r = attribute_capture(request);
  const Timeline& tl = r.timeline();
  const AttributionTable& a = r.attribution;
  std::size_t replayed = 0, placed = 0;
  for (std::size_t k = 0; k < tl.kernels.size(); ++k) {
    if (tl.kernels.kind[k] != ActivityKind::kKernel || tl.kernels.graph_id[k] == kNoGraph) continue;
    ++replayed;
    placed += a.path[k] == AttributionPath::kEnclosure;
  }
  EXPECT_EQ(replayed, 126u);
  EXPECT_EQ(placed, replayed);
}
