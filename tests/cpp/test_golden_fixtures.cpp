// The engine end to end on real H200 captures (tests/fixtures/*/README.md says how each was made):
// trace -> attribution -> ncu matching -> aggregation -> coverage, checked against the figures the
// attribution engine must reach.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "golden_checks.hpp"
#include "opprof/pipeline/attribute.hpp"
#include "cli_harness.hpp"

using namespace opprof;

namespace {

// The pipeline as `opprof attribute` runs it, without writing the database.
using Profiled = AttributeResult;

Profiled run(const std::string& name, bool compiled) {
  const std::string dir = opprof::test::fixture(name);
  AttributeRequest request;
  request.trace = dir + "/trace.json.gz";
  request.ncu = dir + "/ncu.csv.gz";
  if (compiled) request.inductor = dir + "/inductor";
  Profiled p = attribute_capture(request);
  EXPECT_EQ(p.chip, "gh100");  // the H200 the fixture was captured on: the metric set for that chip
  return p;
}

// The counters metric-set format 2 (issue 13) added: these captures were made with the set before it, so
// they lack exactly these and have every other metric of the set.
const std::set<std::string> kAddedAfterTheCapture = {
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "sm__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "lts__t_sectors.sum",
    "l1tex__t_sectors.sum",
    "smsp__inst_issued.sum",
    "sm__ops_path_tensor_src_fp16.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp8.sum",
    "sm__ops_path_tensor_src_fp64.sum",
};

void expect_exact_matching(const Profiled& p) {
  opprof::testing::expect_ncu_matches_every_kernel(p.timeline(), *p.ncu, *p.match);
  EXPECT_EQ(p.match->matched, p.coverage.kernels);
  for (const std::string& m : p.kernel_metrics.missing) EXPECT_EQ(kAddedAfterTheCapture.count(m), 1u) << m;
}

const GroupStats* find_group(const std::vector<GroupStats>& groups, const std::string& key) {
  auto it = std::find_if(groups.begin(), groups.end(), [&](const GroupStats& g) { return g.key == key; });
  return it == groups.end() ? nullptr : &*it;
}

}  // namespace

TEST(GoldenGpt2Compiled, AttributesAllKernelTimeAndMatchesEveryNcuRow) {
  Profiled p = run("gpt2_compiled", /*compiled=*/true);
  EXPECT_EQ(p.coverage.kernels, 126u);
  EXPECT_GE(p.coverage.pct(p.coverage.attributed_ns), 99.0);
  EXPECT_GE(p.coverage.pct(p.coverage.module_attributed_ns), 95.0);
  EXPECT_GT(p.coverage.by_path_ns[static_cast<int>(AttributionPath::kFusion)], 0);
  expect_exact_matching(p);
  EXPECT_EQ(p.coverage.ncu_grid_block_disagreements, 0u);
}

TEST(GoldenGpt2Compiled, FusedKernelsCarryTheirAtenOpsAndModules) {
  Profiled p = run("gpt2_compiled", true);
  std::size_t triton = 0;
  for (std::size_t k = 0; k < p.timeline().kernels.size(); ++k) {
    std::string_view name = p.timeline().str(p.timeline().kernels.name[k]);
    if (name.substr(0, 7) != "triton_") continue;
    ++triton;
    EXPECT_EQ(p.attribution.path[k], AttributionPath::kFusion) << name;
    EXPECT_NE(p.attribution.fused_ops[k], kNoString) << name;
    EXPECT_EQ(p.attribution.module_source[k], ModuleSource::kFxProvenance) << name;
  }
  EXPECT_EQ(triton, 41u);  // the Triton launches of this capture's step
  // Library GEMMs of the compiled graph get the module of the FX node their wrapper call came from.
  const GroupStats* c_attn = find_group(p.aggregates.modules, "transformer.h.0.attn.c_attn");
  ASSERT_NE(c_attn, nullptr);
  EXPECT_GE(c_attn->kernels, 1u);
  const GroupStats* lm_head = find_group(p.aggregates.modules, "lm_head");
  ASSERT_NE(lm_head, nullptr);
  EXPECT_GT(lm_head->time_share, 0.1);  // the 50257-wide vocabulary projection dominates
  // The GELU of every layer fuses into one pointwise kernel, attributed to the MLP's activation.
  const GroupStats* gelu = find_group(p.aggregates.operators, "triton_poi_fused_add_addmm_mul_pow_tanh_view_4");
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->kernels, 12u);
  EXPECT_NE(gelu->fused_ops.find("aten.tanh"), std::string::npos);
  EXPECT_NE(gelu->bottleneck, "unmeasured");
}

TEST(GoldenGpt2Eager, AttributesOperatorsAndModulesAndMatchesEveryNcuRow) {
  Profiled p = run("gpt2_eager", /*compiled=*/false);
  EXPECT_EQ(p.coverage.kernels, 219u);
  EXPECT_GE(p.coverage.pct(p.coverage.attributed_ns), 99.0);
  EXPECT_GE(p.coverage.pct(p.coverage.module_attributed_ns), 95.0);
  expect_exact_matching(p);
  const GroupStats* mm = find_group(p.aggregates.operators, "aten::addmm");
  ASSERT_NE(mm, nullptr);
  EXPECT_GT(mm->time_share, 0.2);
  EXPECT_EQ(mm->counted_time_ns, mm->time_ns);  // every addmm kernel has counters
  EXPECT_GT(mm->dram_bandwidth_gbps, 0);
  EXPECT_GT(mm->flops, 0);
  ASSERT_NE(find_group(p.aggregates.modules, "transformer.h.11.mlp.c_fc"), nullptr);
}

TEST(GoldenLstm, CudnnRnnKernelsAreFlaggedOpaqueWithTheirShare) {
  Profiled p = run("lstm", /*compiled=*/false);
  expect_exact_matching(p);
  EXPECT_GE(p.coverage.pct(p.coverage.opaque_ns), 85.0);
  ASSERT_FALSE(p.coverage.opaque_backends.empty());
  EXPECT_EQ(p.coverage.opaque_backends[0].first, "cuDNN RNN");
  std::size_t rnn_kernels = 0;
  for (std::size_t k = 0; k < p.timeline().kernels.size(); ++k) {
    if (p.attribution.opaque[k]) {
      ++rnn_kernels;
      EXPECT_EQ(p.timeline().str(p.attribution.op[k]).substr(0, 6), "aten::");
    }
  }
  EXPECT_GT(rnn_kernels, 100u);
  // The Linear head after the LSTM is not part of the backend.
  const GroupStats* head = find_group(p.aggregates.modules, "head");
  ASSERT_NE(head, nullptr);
}
