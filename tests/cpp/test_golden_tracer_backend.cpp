// The tracer backend against the torch.profiler backend on one H200 session (tests/fixtures/gpt2_tracer/
// README.md): GPT-2 small eager, compiled and compiled with CUDA graphs, each captured by `opprof profile`
// with --backend tracer and with --backend torch; and a compiled MLP's training step
// (tests/fixtures/mlp_train_compiled/README.md). The tracer must attribute every kernel to the same
// operator and module as torch.profiler, match every ncu row, and reach the operators of CUDA-graph
// replays.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "golden_checks.hpp"
#include "opprof/compare/profile_compare.hpp"
#include "opprof/pipeline/attribute.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/timeline/timeline.hpp"
#include "opprof/util/text.hpp"
#include "profile_fixture.hpp"
#include "cli_harness.hpp"

using namespace opprof;

namespace {

using opprof::test::fixture;
std::string dir(const std::string& capture) { return fixture("gpt2_tracer/" + capture); }

// A capture through the pipeline as `opprof attribute` runs it, without writing the database.
AttributeResult attribute(const std::string& trace, const std::string& inductor_dir, const std::string& ncu_csv) {
  AttributeRequest request;
  request.trace = trace;
  request.inductor = inductor_dir;
  request.ncu = ncu_csv;
  return attribute_capture(request);
}

// The two captures in one directory (torch_trace.json.gz, trace.opprof) attributed by the CLI and compared as
// `opprof compare` compares them: kernels aligned by name in invocation order, agreement weighted by kernel time.
ProfileComparison compare_backends_in(const std::string& capture_dir, bool compiled) {
  opprof::testing::TempDir tmp;
  const std::string inductor = compiled ? " --inductor " + capture_dir + "/inductor" : "";
  for (const auto& [trace, db] :
       {std::pair<std::string, std::string>{"torch_trace.json.gz", "torch.db"}, {"trace.opprof", "tracer.db"}}) {
    const std::string cmd = std::string(OPPROF_CLI_PATH) + " attribute -q --trace " + capture_dir + "/" + trace +
                            inductor + " -o " + tmp.file(db);
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  const ProfileComparison c = compare_profiles(ProfileReader(tmp.file("torch.db")), ProfileReader(tmp.file("tracer.db")));
  std::printf("%s: tracer vs torch.profiler: operator %.2f%%, top-level operator %.2f%%, module %.2f%% of kernel time\n",
              capture_dir.c_str(), c.op.pct, c.top_op.pct, c.module.pct);
  return c;
}

ProfileComparison compare_backends(const std::string& mode, bool compiled) { return compare_backends_in(dir(mode), compiled); }

// Every kernel of one backend has its counterpart in the other, with the same operator, top-level
// operator and module.
void expect_same_attribution(const ProfileComparison& c, std::size_t kernels) {
  EXPECT_EQ(c.a.kernels, kernels);
  EXPECT_EQ(c.b.kernels, kernels);
  EXPECT_EQ(c.aligned, kernels);
  EXPECT_TRUE(c.ordered);
  EXPECT_GE(c.op.pct, 99.0);
  EXPECT_GE(c.module.pct, 99.0);
  std::string differing;  // torch / tracer, for the failure message
  for (const Disagreement& d : c.disagreements)
    differing += "\n  " + d.kernel + ": operator " + d.op_a + " / " + d.op_b + ", top-level operator " + d.top_op_a +
                 " / " + d.top_op_b + ", module " + d.module_a + " / " + d.module_b;
  EXPECT_EQ(c.op.pairs, kernels) << differing;
  EXPECT_EQ(c.top_op.pairs, kernels) << differing;
}

void expect_every_ncu_row_matched(const AttributeResult& p, std::size_t kernels) {
  ASSERT_TRUE(p.ncu && p.match);
  EXPECT_EQ(p.ncu->rows(), kernels);
  opprof::testing::expect_ncu_matches_every_kernel(p.timeline(), *p.ncu, *p.match);
}

// The tracer defers the observer's operator ranges: each one it wrote has a launch inside it, on its thread.
// Returns how many operator ranges the log holds.
std::size_t expect_operator_ranges_enclose_launches(const Timeline& tl) {
  std::size_t operators = 0;
  for (std::size_t r = 0; r < tl.ranges.size(); ++r) {
    if (tl.ranges.kind[r] != RangeKind::kOperator || tl.str(tl.ranges.domain[r]) != kTorchObserverDomain) continue;
    ++operators;
    bool launched = false;
    for (std::size_t l = 0; l < tl.launches.size() && !launched; ++l)
      launched = tl.launches.tid[l] == tl.ranges.owner(r) && tl.launches.cpu_start_ns[l] >= tl.ranges.start_ns[r] &&
                 tl.launches.cpu_start_ns[l] <= tl.ranges.end_ns[r];
    EXPECT_TRUE(launched) << tl.str(tl.ranges.text[r]) << " at " << tl.ranges.start_ns[r];
  }
  return operators;
}

}  // namespace

TEST(GoldenTracerBackend, EagerGpt2AgreesWithTorchProfilerKernelByKernel) {
  const AttributeResult tracer = attribute(dir("e/trace.opprof"), "", dir("e/ncu.csv.gz"));
  EXPECT_EQ(tracer.timeline().metadata.at("source"), "opprof-tracer");
  EXPECT_EQ(tracer.coverage.kernels, 219u);
  EXPECT_DOUBLE_EQ(tracer.coverage.pct(tracer.coverage.attributed_ns), 100.0);
  EXPECT_DOUBLE_EQ(tracer.coverage.pct(tracer.coverage.module_attributed_ns), 100.0);
  expect_same_attribution(compare_backends("e", /*compiled=*/false), 219);
  expect_every_ncu_row_matched(tracer, 219);
  // About 1,550 operator calls per step, of which only those around the 219 launches were written.
  const std::size_t operators = expect_operator_ranges_enclose_launches(tracer.timeline());
  EXPECT_GT(operators, 219u);
  EXPECT_LT(operators, 600u);
}

TEST(GoldenTracerBackend, CompiledGpt2AgreesWithTorchProfilerKernelByKernel) {
  const AttributeResult tracer = attribute(dir("c/trace.opprof"), dir("c/inductor"), dir("c/ncu.csv.gz"));
  EXPECT_EQ(tracer.coverage.kernels, 126u);
  EXPECT_DOUBLE_EQ(tracer.coverage.pct(tracer.coverage.attributed_ns), 100.0);
  EXPECT_GE(tracer.coverage.pct(tracer.coverage.module_attributed_ns), 99.0);
  // Dynamo's region reaches the reader as a region, not an operator, so fusion lines its launches up.
  EXPECT_GT(tracer.coverage.by_path_ns[static_cast<int>(AttributionPath::kFusion)], 0);
  EXPECT_GT(expect_operator_ranges_enclose_launches(tracer.timeline()), 0u);
  expect_same_attribution(compare_backends("c", /*compiled=*/true), 126);
  expect_every_ncu_row_matched(tracer, 126);
}

TEST(GoldenTracerBackend, CudaGraphReplaysReachTheirOperatorsThroughTheWrapperCalls) {
  const AttributeResult tracer = attribute(dir("ro/trace.opprof"), dir("ro/inductor"), "");
  std::size_t replayed = 0;
  std::int64_t replayed_ns = 0, named_ns = 0;
  for (std::size_t k = 0; k < tracer.timeline().kernels.size(); ++k) {
    if (tracer.timeline().kernels.kind[k] != ActivityKind::kKernel || tracer.timeline().kernels.graph_id[k] == kNoGraph) continue;
    ++replayed;
    const std::int64_t d = tracer.timeline().kernels.end_ns[k] - tracer.timeline().kernels.start_ns[k];
    replayed_ns += d;
    const std::string op(tracer.timeline().str(tracer.attribution.op[k]));
    // An operator: an ATen op for library kernels, the generated kernel's own name for Triton kernels;
    // never the compiled region that merely encloses the graph.
    const bool named = starts_with(op, "aten::") || starts_with(op, "triton_");
    named_ns += named ? d : 0;
    EXPECT_TRUE(named) << tracer.timeline().str(tracer.timeline().kernels.name[k]) << " -> " << op;
    EXPECT_NE(tracer.attribution.module[k], kNoString) << tracer.timeline().str(tracer.timeline().kernels.name[k]);
  }
  EXPECT_EQ(replayed, 126u);
  EXPECT_EQ(named_ns, replayed_ns);
  EXPECT_GE(tracer.coverage.pct(tracer.coverage.module_attributed_ns), 99.0);

  // torch.profiler sees each replay as one graph launch; the same wrapper-call alignment gives its kernels
  // the same operators and modules.
  expect_same_attribution(compare_backends("ro", /*compiled=*/true), 127);
}

// Training a compiled model: AOTAutograd wraps the forward graph's call in a "CompiledFunction" operator and
// the backward graph's (on the autograd engine's thread) in "CompiledFunctionBackward". The tracer's
// timeline has no "## Call CompiledFxGraph" region inside them (Inductor emits it only under torch's
// profiler), so the wrappers stand for the graph calls: every kernel still lines up with its wrapper call,
// and gets the operator and module torch.profiler's timeline gives it.
TEST(GoldenTracerBackend, CompiledTrainingStepAgreesWithTorchProfilerKernelByKernel) {
  const std::string capture = fixture("mlp_train_compiled");
  const AttributeResult tracer = attribute(capture + "/trace.opprof", capture + "/inductor", capture + "/ncu.csv.gz");
  EXPECT_EQ(tracer.coverage.kernels, 38u);
  EXPECT_DOUBLE_EQ(tracer.coverage.pct(tracer.coverage.attributed_ns), 100.0);
  // Each Triton kernel lined up with its wrapper call, which names its operator (not the enclosing
  // CompiledFunction): 3 in the forward graph, 10 in the backward graph.
  std::size_t generated = 0, backward = 0;
  for (std::size_t i = 0; i < tracer.timeline().kernels.size(); ++i) {
    const std::string_view name = tracer.timeline().str(tracer.timeline().kernels.name[i]);
    if (!starts_with(name, "triton_")) continue;
    ++generated;
    EXPECT_EQ(tracer.attribution.path[i], AttributionPath::kFusion) << name;
    EXPECT_EQ(tracer.timeline().str(tracer.attribution.op[i]), name);
    backward += starts_with(tracer.timeline().str(tracer.attribution.top_op[i]), "autograd::engine::evaluate_function: ") ? 1 : 0;
  }
  EXPECT_EQ(generated, 13u);
  EXPECT_EQ(backward, 10u);
  expect_same_attribution(compare_backends_in(capture, /*compiled=*/true), 38);
  expect_every_ncu_row_matched(tracer, 38);
}
