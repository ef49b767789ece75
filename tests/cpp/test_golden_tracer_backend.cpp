// The tracer backend against the torch.profiler backend on one H200 session (tests/fixtures/gpt2_tracer/
// README.md): GPT-2 small eager, compiled and compiled with CUDA graphs, each captured by `opprof profile`
// with --backend tracer and with --backend torch. The tracer must attribute every kernel to the same
// operator and module as torch.profiler, match every ncu row, and reach the operators of CUDA-graph
// replays, which torch.profiler does not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "opprof/attribute/engine.hpp"
#include "opprof/ingest/inductor.hpp"
#include "opprof/ingest/ncu_csv.hpp"
#include "opprof/ingest/timeline_source.hpp"
#include "opprof/match/ncu_match.hpp"
#include "opprof/metrics/aggregate.hpp"
#include "opprof/timeline/timeline.hpp"
#include "opprof/util/text.hpp"

using namespace opprof;

namespace {

std::string dir(const std::string& capture) { return std::string(OPPROF_FIXTURES_DIR) + "/gpt2_tracer/" + capture; }

struct Attributed {
  Timeline tl;
  AttributionTable attr;
  Coverage cov;
};

Attributed attribute(const std::string& trace, const std::string& inductor_dir) {
  Attributed p;
  p.tl = read_timeline(trace);
  InductorArtifacts ind;
  if (!inductor_dir.empty()) ind = read_inductor_artifacts(inductor_dir);
  p.attr = attribute_timeline(p.tl, inductor_dir.empty() ? nullptr : &ind, AttributionOptions{});
  p.cov = compute_coverage(p.tl, p.attr, nullptr, 0);
  return p;
}

std::vector<std::size_t> kernels_in_order(const Timeline& tl) {
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < tl.kernels.size(); ++k)
    if (tl.kernels.kind[k] == ActivityKind::kKernel) out.push_back(k);
  std::stable_sort(out.begin(), out.end(), [&](std::size_t x, std::size_t y) { return tl.kernels.start_ns[x] < tl.kernels.start_ns[y]; });
  return out;
}

// Pairs the kernels of two captures of the same iteration by invocation order (the same program launches
// the same kernels) and returns the share of kernel time, by the tracer's durations, on which both agree.
struct Agreement {
  double op_pct = 0, module_pct = 0;
  std::size_t pairs = 0;
};
Agreement agreement(const Attributed& tracer, const Attributed& torch) {
  const auto a = kernels_in_order(tracer.tl), b = kernels_in_order(torch.tl);
  EXPECT_EQ(a.size(), b.size());
  Agreement out;
  std::int64_t total = 0, same_op = 0, same_module = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const std::size_t x = a[i], y = b[i];
    EXPECT_EQ(kernel_match_name(tracer.tl.str(tracer.tl.kernels.name[x])), kernel_match_name(torch.tl.str(torch.tl.kernels.name[y])))
        << "kernel " << i;
    const std::int64_t d = tracer.tl.kernels.end_ns[x] - tracer.tl.kernels.start_ns[x];
    total += d;
    const bool op = tracer.tl.str(tracer.attr.op[x]) == torch.tl.str(torch.attr.op[y]);
    const bool module = tracer.tl.str(tracer.attr.module[x]) == torch.tl.str(torch.attr.module[y]);
    EXPECT_EQ(tracer.tl.str(tracer.attr.top_op[x]), torch.tl.str(torch.attr.top_op[y])) << "kernel " << i;
    EXPECT_TRUE(op) << "kernel " << i << " " << tracer.tl.str(tracer.tl.kernels.name[x]) << ": tracer "
                    << tracer.tl.str(tracer.attr.op[x]) << ", torch " << torch.tl.str(torch.attr.op[y]);
    same_op += op ? d : 0;
    same_module += module ? d : 0;
    ++out.pairs;
  }
  out.op_pct = total ? 100.0 * static_cast<double>(same_op) / static_cast<double>(total) : 0;
  out.module_pct = total ? 100.0 * static_cast<double>(same_module) / static_cast<double>(total) : 0;
  return out;
}

void expect_every_ncu_row_matched(const Timeline& tl, const std::string& ncu_csv, std::size_t kernels) {
  const NcuTable ncu = read_ncu_csv(ncu_csv);
  const NcuMatch m = match_ncu(tl, ncu);
  EXPECT_EQ(ncu.rows(), kernels);
  EXPECT_EQ(m.matched, kernels);
  EXPECT_TRUE(m.unmatched_rows.empty());
  EXPECT_TRUE(m.unmatched_kernels.empty());
  for (std::size_t k = 0; k < tl.kernels.size(); ++k) {
    if (tl.kernels.kind[k] != ActivityKind::kKernel) continue;
    const std::uint32_t row = m.ncu_row_for_kernel[k];
    ASSERT_NE(row, kNoIndex) << "kernel " << k;
    EXPECT_EQ(tl.kernels.grid[k], ncu.grid[row]) << "kernel " << k;
    EXPECT_EQ(tl.kernels.block[k], ncu.block[row]) << "kernel " << k;
  }
}

}  // namespace

TEST(GoldenTracerBackend, EagerGpt2AgreesWithTorchProfilerKernelByKernel) {
  const Attributed tracer = attribute(dir("e/trace.opprof"), "");
  const Attributed torch = attribute(dir("e/torch_trace.json.gz"), "");
  EXPECT_EQ(tracer.tl.metadata.at("source"), "opprof-tracer");
  EXPECT_EQ(tracer.cov.kernels, 219u);
  EXPECT_DOUBLE_EQ(tracer.cov.pct(tracer.cov.attributed_ns), 100.0);
  EXPECT_DOUBLE_EQ(tracer.cov.pct(tracer.cov.module_attributed_ns), 100.0);
  const Agreement g = agreement(tracer, torch);
  std::printf("eager: tracer vs torch.profiler: operator %.2f%%, module %.2f%% of kernel time\n", g.op_pct, g.module_pct);
  EXPECT_EQ(g.pairs, 219u);
  EXPECT_GE(g.op_pct, 99.0);
  EXPECT_GE(g.module_pct, 99.0);
  expect_every_ncu_row_matched(tracer.tl, dir("e/ncu.csv.gz"), 219);
}

TEST(GoldenTracerBackend, CompiledGpt2AgreesWithTorchProfilerKernelByKernel) {
  const Attributed tracer = attribute(dir("c/trace.opprof"), dir("c/inductor"));
  const Attributed torch = attribute(dir("c/torch_trace.json.gz"), dir("c/inductor"));
  EXPECT_EQ(tracer.cov.kernels, 126u);
  EXPECT_DOUBLE_EQ(tracer.cov.pct(tracer.cov.attributed_ns), 100.0);
  EXPECT_GE(tracer.cov.pct(tracer.cov.module_attributed_ns), 99.0);
  // Dynamo's region reaches the reader as a region, not an operator, so fusion lines its launches up.
  EXPECT_GT(tracer.cov.by_path_ns[static_cast<int>(AttributionPath::kFusion)], 0);
  const Agreement g = agreement(tracer, torch);
  std::printf("compiled: tracer vs torch.profiler: operator %.2f%%, module %.2f%% of kernel time\n", g.op_pct,
              g.module_pct);
  EXPECT_EQ(g.pairs, 126u);
  EXPECT_GE(g.op_pct, 99.0);
  EXPECT_GE(g.module_pct, 99.0);
  expect_every_ncu_row_matched(tracer.tl, dir("c/ncu.csv.gz"), 126);
}

TEST(GoldenTracerBackend, CudaGraphReplaysReachTheirOperatorsThroughTheWrapperCalls) {
  const Attributed tracer = attribute(dir("ro/trace.opprof"), dir("ro/inductor"));
  std::size_t replayed = 0;
  std::int64_t replayed_ns = 0, named_ns = 0;
  for (std::size_t k = 0; k < tracer.tl.kernels.size(); ++k) {
    if (tracer.tl.kernels.kind[k] != ActivityKind::kKernel || tracer.tl.kernels.graph_id[k] == kNoGraph) continue;
    ++replayed;
    const std::int64_t d = tracer.tl.kernels.end_ns[k] - tracer.tl.kernels.start_ns[k];
    replayed_ns += d;
    const std::string op(tracer.tl.str(tracer.attr.op[k]));
    // An operator: an ATen op for library kernels, the generated kernel's own name for Triton kernels;
    // never the compiled region that merely encloses the graph.
    const bool named = starts_with(op, "aten::") || starts_with(op, "triton_");
    named_ns += named ? d : 0;
    EXPECT_TRUE(named) << tracer.tl.str(tracer.tl.kernels.name[k]) << " -> " << op;
    EXPECT_NE(tracer.attr.module[k], kNoString) << tracer.tl.str(tracer.tl.kernels.name[k]);
  }
  EXPECT_EQ(replayed, 126u);
  EXPECT_EQ(named_ns, replayed_ns);
  EXPECT_GE(tracer.cov.pct(tracer.cov.module_attributed_ns), 99.0);

  // torch.profiler sees each replay as one graph launch; the same wrapper-call alignment gives its kernels
  // the same operators and modules.
  const Attributed torch = attribute(dir("ro/torch_trace.json.gz"), dir("ro/inductor"));
  const Agreement g = agreement(tracer, torch);
  std::printf("reduce-overhead: tracer vs torch.profiler: operator %.2f%%, module %.2f%% of kernel time\n", g.op_pct,
              g.module_pct);
  EXPECT_GE(g.op_pct, 99.0);
  EXPECT_GE(g.module_pct, 99.0);
}
