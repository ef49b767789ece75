// The attribution engine on timelines built by hand: each path, the fallbacks, opaque backends and
// fusion alignment.
#include <gtest/gtest.h>

#include "opprof/attribute/engine.hpp"
#include "opprof/attribute/fusion.hpp"

using namespace opprof;

namespace {

constexpr std::uint32_t kPid = 100;
constexpr std::uint64_t kTid = 7;

struct Builder {
  Timeline tl;
  std::uint64_t next_corr = 1;

  std::size_t range(RangeKind kind, std::string_view text, std::int64_t s, std::int64_t e, std::uint64_t tid = kTid) {
    return tl.ranges.add(kind, RangeScope::kThread, tl.strings.intern(text), tl.strings.intern("cpu_op"), kPid, tid, s,
                         e);
  }
  std::size_t stream_range(RangeKind kind, std::string_view text, std::int64_t s, std::int64_t e, std::uint32_t stream) {
    auto i = tl.ranges.add(kind, RangeScope::kStream, tl.strings.intern(text), tl.strings.intern("gpu_user_annotation"),
                           kPid, stream, s, e);
    return i;
  }
  // A kernel launched at cpu time t, running on the GPU at [gs, ge].
  std::size_t kernel(std::string_view name, std::int64_t t, std::int64_t gs, std::int64_t ge, std::uint32_t stream = 7,
                     bool with_launch = true, std::uint64_t tid = kTid) {
    std::uint64_t corr = next_corr++;
    auto i = tl.kernels.add(ActivityKind::kKernel, tl.strings.intern(name), 0, stream, gs, ge);
    tl.kernels.correlation[i] = corr;
    if (with_launch) tl.launches.add(tl.strings.intern("cudaLaunchKernel"), kPid, tid, t, t + 5, corr);
    return i;
  }
  std::string_view op(const AttributionTable& a, std::size_t i) { return tl.str(a.op[i]); }
  std::string_view module(const AttributionTable& a, std::size_t i) { return tl.str(a.module[i]); }
};

}  // namespace

TEST(AttributionEngine, CorrelationNamesTheInnermostOperatorAndModule) {
  Builder b;
  b.range(RangeKind::kModule, "GPT2", 0, 1000);
  b.range(RangeKind::kModule, "h.0.mlp", 100, 500);
  b.range(RangeKind::kOperator, "aten::linear", 110, 300);
  b.range(RangeKind::kOperator, "aten::addmm", 120, 290);
  b.range(RangeKind::kOperator, "aten::gelu", 310, 400);
  auto k0 = b.kernel("gemm", 130, 2000, 2100);
  auto k1 = b.kernel("gelu_kernel", 320, 2100, 2150);
  auto k2 = b.kernel("copy_kernel", 600, 2200, 2210);  // outside every operator
  AttributionTable a = attribute_timeline(b.tl, nullptr, AttributionOptions{});
  EXPECT_EQ(a.path[k0], AttributionPath::kCorrelation);
  EXPECT_EQ(b.op(a, k0), "aten::addmm");
  EXPECT_EQ(b.tl.str(a.top_op[k0]), "aten::linear");
  EXPECT_EQ(b.module(a, k0), "h.0.mlp");
  EXPECT_EQ(a.module_source[k0], ModuleSource::kThreadRange);
  EXPECT_EQ(b.op(a, k1), "aten::gelu");
  EXPECT_EQ(a.path[k2], AttributionPath::kNone);
  EXPECT_NE(b.tl.str(a.reason[k2]).find("outside every operator range"), std::string_view::npos);
  EXPECT_EQ(b.module(a, k2), "GPT2");  // the module range still encloses its launch
  EXPECT_EQ(b.tl.str(a.family[k0]), "gemm");
}

TEST(AttributionEngine, LaunchesOnAnotherThreadDoNotSeeThisThreadsRanges) {
  Builder b;
  b.range(RangeKind::kOperator, "aten::mm", 0, 1000, /*tid=*/1);
  auto k = b.kernel("gemm", 500, 2000, 2100, 7, true, /*tid=*/2);
  AttributionTable a = attribute_timeline(b.tl, nullptr, AttributionOptions{});
  EXPECT_EQ(a.path[k], AttributionPath::kNone);
}

TEST(AttributionEngine, EnclosureOnTheStreamWhenTheLaunchIsMissing) {
  Builder b;
  b.stream_range(RangeKind::kAnnotation, "nccl:all_reduce", 1000, 5000, 9);
  b.stream_range(RangeKind::kAnnotation, "step", 0, 10000, 9);
  auto k = b.kernel("ncclKernel", 0, 2000, 3000, 9, /*with_launch=*/false);
  auto other_stream = b.kernel("ncclKernel", 0, 2000, 3000, 3, /*with_launch=*/false);
  AttributionTable a = attribute_timeline(b.tl, nullptr, AttributionOptions{});
  EXPECT_EQ(a.path[k], AttributionPath::kEnclosure);
  EXPECT_EQ(b.op(a, k), "nccl:all_reduce");
  EXPECT_EQ(b.tl.str(a.top_op[k]), "step");
  EXPECT_LT(a.confidence[k], 1.0f);
  EXPECT_EQ(a.path[other_stream], AttributionPath::kNone);
  EXPECT_NE(b.tl.str(a.reason[other_stream]).find("no launch record"), std::string_view::npos);
}

TEST(AttributionEngine, ModuleRangesAreProjectedOntoTheStream) {
  Builder b;
  b.range(RangeKind::kModule, "encoder.layer.0", 0, 1000);
  b.range(RangeKind::kOperator, "aten::mm", 10, 100);
  b.kernel("gemm", 20, 5000, 5100);        // correlation gives it the module
  b.kernel("gemm", 30, 5200, 5300);
  auto orphan = b.kernel("side_kernel", 0, 5150, 5180, 7, /*with_launch=*/false);  // between them on the stream
  AttributionTable a = attribute_timeline(b.tl, nullptr, AttributionOptions{});
  EXPECT_EQ(b.module(a, orphan), "encoder.layer.0");
  EXPECT_EQ(a.module_source[orphan], ModuleSource::kStreamRange);
  EXPECT_EQ(a.path[orphan], AttributionPath::kNone);  // a module is not an operator
}

TEST(AttributionEngine, OpaqueBackendsAreFlagged) {
  Builder b;
  b.range(RangeKind::kOperator, "aten::lstm", 0, 1000);
  b.range(RangeKind::kOperator, "aten::_cudnn_rnn", 10, 900);
  b.range(RangeKind::kOperator, "aten::add", 950, 990);
  auto rnn = b.kernel("RNN_blockPersist_fp_LSTM", 20, 2000, 3000);
  auto add = b.kernel("elementwise", 960, 3000, 3010);
  AttributionTable a = attribute_timeline(b.tl, nullptr, AttributionOptions{});
  EXPECT_EQ(a.opaque[rnn], 1);
  EXPECT_EQ(b.tl.str(a.opaque_backend[rnn]), "cuDNN RNN");
  EXPECT_EQ(b.op(a, rnn), "aten::_cudnn_rnn");
  EXPECT_EQ(a.opaque[add], 0);
}

TEST(AttributionEngine, FusionAlignsRegionLaunchesWithWrapperCalls) {
  Builder b;
  b.range(RangeKind::kCompiledRegion, "Torch-Compiled Region: 0/0", 0, 10000);
  b.range(RangeKind::kCompiledRegion, "## Call CompiledFxGraph abc ##", 10, 9000);
  b.range(RangeKind::kOperator, "triton_poi_fused_add_0", 100, 200);
  b.range(RangeKind::kOperator, "aten::mm", 300, 400);
  b.range(RangeKind::kOperator, "triton_per_fused_layer_norm_1", 500, 600);
  auto t0 = b.kernel("triton_poi_fused_add_0", 110, 20000, 20010);
  auto g0 = b.kernel("sm90_gemm", 310, 20020, 20100);
  auto g1 = b.kernel("splitKreduce_kernel", 320, 20100, 20110);
  auto t1 = b.kernel("triton_per_fused_layer_norm_1", 510, 20120, 20130);

  InductorArtifacts ind;
  InductorGraph g;
  g.dir = "graph0";
  g.graph_hash = "abc";
  g.calls.push_back({WrapperCall::Kind::kTriton, "triton_poi_fused_add_0", "triton_poi_fused_add_0:1", {"x", "add"},
                     {"aten.add"}, 1});
  g.calls.push_back({WrapperCall::Kind::kExtern, "aten::mm", "extern_kernels.mm:2", {"linear"}, {"aten.mm"}, 2});
  g.calls.push_back({WrapperCall::Kind::kTriton, "triton_per_fused_layer_norm_1", "triton_per_fused_layer_norm_1:3",
                     {"ln"}, {"aten.native_layer_norm"}, 3});
  g.handle_to_post_nodes["triton_poi_fused_add_0:1"] = {"add_1"};
  g.post_to_pre_nodes["add_1"] = {"add", "x"};
  g.post_node_source["add_1"] = "model.py:10 in forward";
  ind.graphs.push_back(g);
  FxModuleMap map;
  map.compile_id = "0/0";
  map.nodes["add"] = {"block.0", "Block", "model.py:10"};
  map.nodes["x"] = {"block.0", "Block", "model.py:9"};
  map.nodes["linear"] = {"block.0.proj", "Linear", "model.py:11"};
  map.nodes["ln"] = {"block.0.ln", "LayerNorm", "model.py:12"};
  ind.module_maps.push_back(map);

  AttributionNotes notes;
  AttributionTable a = attribute_timeline(b.tl, &ind, AttributionOptions{}, &notes);
  EXPECT_EQ(a.path[t0], AttributionPath::kFusion);
  EXPECT_EQ(b.op(a, t0), "triton_poi_fused_add_0");
  EXPECT_EQ(b.tl.str(a.fused_ops[t0]), "aten.add");
  EXPECT_EQ(b.tl.str(a.fx_nodes[t0]), "add,x");
  EXPECT_EQ(b.module(a, t0), "block.0");
  EXPECT_EQ(a.module_source[t0], ModuleSource::kFxProvenance);
  EXPECT_EQ(b.tl.str(a.source_line[t0]), "model.py:10 in forward");
  // Both kernels of the extern call keep their operator and gain its module.
  for (auto g_kernel : {g0, g1}) {
    EXPECT_EQ(a.path[g_kernel], AttributionPath::kCorrelation);
    EXPECT_EQ(b.op(a, g_kernel), "aten::mm");
    EXPECT_EQ(b.module(a, g_kernel), "block.0.proj");
    EXPECT_EQ(b.tl.str(a.provenance_handle[g_kernel]), "extern_kernels.mm:2");
  }
  EXPECT_EQ(b.module(a, t1), "block.0.ln");
  EXPECT_TRUE(notes.lines.empty()) << notes.lines.front();
}

TEST(AttributionEngine, FusionReportsWhatItCouldNotAlign) {
  Builder b;
  b.range(RangeKind::kCompiledRegion, "## Call CompiledFxGraph abc ##", 0, 9000);
  b.range(RangeKind::kOperator, "triton_poi_fused_add_0", 100, 200);
  b.range(RangeKind::kOperator, "triton_poi_fused_unknown_9", 300, 400);
  auto known = b.kernel("triton_poi_fused_add_0", 110, 20000, 20010);
  auto unknown = b.kernel("triton_poi_fused_unknown_9", 310, 20020, 20030);
  InductorArtifacts ind;
  InductorGraph g;
  g.graph_hash = "abc";
  g.calls.push_back({WrapperCall::Kind::kTriton, "triton_poi_fused_add_0", "", {"add"}, {"aten.add"}, 1});
  ind.graphs.push_back(g);
  AttributionNotes notes;
  AttributionTable a = attribute_timeline(b.tl, &ind, AttributionOptions{}, &notes);
  EXPECT_EQ(a.path[known], AttributionPath::kFusion);
  EXPECT_EQ(a.path[unknown], AttributionPath::kCorrelation);
  ASSERT_EQ(notes.lines.size(), 1u);
  EXPECT_NE(notes.lines[0].find("1 of 2 launches"), std::string::npos);
}

TEST(AttributionEngine, GeneratedKernelsWithoutRangesMatchByUniqueName) {
  Builder b;
  auto k = b.kernel("triton_poi_fused_add_0", 0, 100, 110, 7, /*with_launch=*/false);
  InductorArtifacts ind;
  InductorGraph g;
  g.calls.push_back({WrapperCall::Kind::kTriton, "triton_poi_fused_add_0", "h:1", {"add"}, {"aten.add"}, 1});
  ind.graphs.push_back(g);
  AttributionTable a = attribute_timeline(b.tl, &ind, AttributionOptions{});
  EXPECT_EQ(a.path[k], AttributionPath::kFusion);
  EXPECT_EQ(b.op(a, k), "triton_poi_fused_add_0");
}

TEST(AttributionEngine, LibraryKernelsWithoutOperatorRangesTakeTheLibraryCallsBetweenGeneratedOnes) {
  // What a CUDA-graph replay looks like: no operator range around the launches, only the region.
  Builder b;
  b.range(RangeKind::kCompiledRegion, "Torch-Compiled Region: 0/0", 0, 9000);
  auto t0 = b.kernel("triton_poi_fused_add_0", 100, 20000, 20010);
  auto gemm = b.kernel("sm90_xmma_gemm_f32", 200, 20020, 20100);
  auto reduce = b.kernel("splitKreduce_kernel", 300, 20100, 20110);  // the same call's second kernel
  auto t1 = b.kernel("triton_per_fused_layer_norm_1", 400, 20120, 20130);
  auto sdpa = b.kernel("fmha_cutlassF_f32", 500, 20140, 20200);
  InductorArtifacts ind;
  InductorGraph g;
  g.calls.push_back({WrapperCall::Kind::kTriton, "triton_poi_fused_add_0", "", {"add"}, {"aten.add"}, 1});
  g.calls.push_back({WrapperCall::Kind::kExtern, "aten::mm", "", {"mm"}, {"aten.mm"}, 2});
  g.calls.push_back({WrapperCall::Kind::kTriton, "triton_per_fused_layer_norm_1", "", {"ln"}, {"aten.native_layer_norm"}, 3});
  g.calls.push_back({WrapperCall::Kind::kExtern, "aten::_scaled_dot_product_efficient_attention", "", {"sdpa"}, {}, 4});
  ind.graphs.push_back(g);
  AttributionTable a = attribute_timeline(b.tl, &ind, AttributionOptions{});
  EXPECT_EQ(b.op(a, t0), "triton_poi_fused_add_0");
  EXPECT_EQ(b.op(a, t1), "triton_per_fused_layer_norm_1");
  for (auto k : {gemm, reduce}) {
    EXPECT_EQ(a.path[k], AttributionPath::kFusion);
    EXPECT_EQ(b.op(a, k), "aten::mm");
    EXPECT_EQ(b.tl.str(a.fx_nodes[k]), "mm");
  }
  EXPECT_EQ(b.op(a, sdpa), "aten::_scaled_dot_product_efficient_attention");
}

TEST(AlignInOrder, FindsTheLongestCommonSubsequence) {
  std::vector<std::string_view> a{"x", "a", "b", "c", "y"};
  std::vector<std::string_view> b{"a", "z", "b", "c"};
  auto same = [&](std::size_t i, std::size_t j) { return a[i] == b[j]; };
  auto pairs = align_in_order(a.size(), b.size(), same);
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0], std::make_pair(std::size_t{1}, std::size_t{0}));
  EXPECT_EQ(pairs[2], std::make_pair(std::size_t{3}, std::size_t{3}));
  auto greedy = align_in_order(a.size(), b.size(), same, /*max_cells=*/1);
  EXPECT_EQ(greedy.size(), 3u);
}

// ---------------------------------------------------------------------------------------------------------
// Phases

namespace {

constexpr std::uint64_t kAutogradTid = 9;

// A training step: forward in module h.0.mlp on the main thread, the backward node on autograd's thread,
// the optimizer step after it.
struct TrainingStep {
  Builder b;
  std::size_t addmm = 0, backward_node = 0;
  std::size_t fwd_kernel = 0, bwd_kernel = 0, bwd_unlinked = 0, opt_kernel = 0, foreach_kernel = 0, seed = 0;

  explicit TrainingStep(bool flows) {
    b.range(RangeKind::kModule, "h.0.mlp", 100, 500);
    b.range(RangeKind::kOperator, "aten::linear", 110, 300);
    addmm = b.range(RangeKind::kOperator, "aten::addmm", 120, 290);
    b.tl.ranges.sequence_nr[addmm] = 48;
    auto linear = static_cast<std::size_t>(addmm - 1);
    b.tl.ranges.sequence_nr[linear] = 47;  // aten::linear saw the number of the node aten::t created
    fwd_kernel = b.kernel("gemm", 130, 2000, 2100);
    seed = b.kernel("fill_kernel", 600, 2150, 2160);  // the gradient seed, outside every operator
    auto engine = b.range(RangeKind::kOperator, "autograd::engine::evaluate_function: AddmmBackward0", 1000, 1200,
                          kAutogradTid);
    backward_node = b.range(RangeKind::kOperator, "AddmmBackward0", 1010, 1190, kAutogradTid);
    for (auto r : {engine, backward_node}) {
      b.tl.ranges.sequence_nr[r] = 48;
      b.tl.ranges.forward_thread[r] = 1;
    }
    b.range(RangeKind::kOperator, "aten::mm", 1020, 1100, kAutogradTid);
    bwd_kernel = b.kernel("gemm", 1030, 3000, 3100, 7, true, kAutogradTid);
    // A node the profiler numbered for no recorded forward operator.
    auto orphan = b.range(RangeKind::kOperator, "autograd::engine::evaluate_function: MulBackward0", 1300, 1400,
                          kAutogradTid);
    b.tl.ranges.sequence_nr[orphan] = 12;
    b.tl.ranges.forward_thread[orphan] = 1;
    bwd_unlinked = b.kernel("mul_kernel", 1310, 3200, 3210, 7, true, kAutogradTid);
    b.tl.ranges.add(RangeKind::kAnnotation, RangeScope::kThread, b.tl.strings.intern("Optimizer.step#AdamW.step"),
                    b.tl.strings.intern("user_annotation"), kPid, kTid, 2000, 2500);
    b.range(RangeKind::kOperator, "aten::_fused_adamw_", 2010, 2400);
    opt_kernel = b.kernel("fused_adamw_kernel", 2020, 4000, 4100);
    b.range(RangeKind::kOperator, "aten::_foreach_norm", 2600, 2700);  // grad clipping, outside the step
    foreach_kernel = b.kernel("multi_tensor_apply_kernel", 2610, 4200, 4300);
    if (flows) b.tl.autograd_links.push_back({static_cast<std::uint32_t>(addmm), static_cast<std::uint32_t>(backward_node)});
  }
};

}  // namespace

TEST(AttributionPhases, BackwardKernelsGetTheirForwardOperatorsModuleAndOptimizerKernelsTheStep) {
  for (bool flows : {true, false}) {
    SCOPED_TRACE(flows ? "linked by the fwdbwd flow" : "linked by sequence number");
    TrainingStep s(flows);
    AttributionNotes notes;
    AttributionTable a = attribute_timeline(s.b.tl, nullptr, AttributionOptions{}, &notes);
    EXPECT_EQ(a.phase[s.fwd_kernel], Phase::kForward);
    EXPECT_EQ(a.forward_op[s.fwd_kernel], kNoString);

    EXPECT_EQ(a.phase[s.bwd_kernel], Phase::kBackward);
    EXPECT_EQ(s.b.op(a, s.bwd_kernel), "aten::mm") << "the operator stays the one that launched it";
    EXPECT_EQ(s.b.tl.str(a.forward_op[s.bwd_kernel]), "aten::addmm");
    EXPECT_EQ(s.b.module(a, s.bwd_kernel), "h.0.mlp");
    EXPECT_EQ(a.module_source[s.bwd_kernel], ModuleSource::kForwardOp);

    EXPECT_EQ(a.phase[s.bwd_unlinked], Phase::kBackward);
    EXPECT_EQ(a.module[s.bwd_unlinked], kNoString) << "no forward operator has its number";
    EXPECT_EQ(a.forward_op[s.bwd_unlinked], kNoString);

    EXPECT_EQ(a.phase[s.opt_kernel], Phase::kOptimizer);
    EXPECT_EQ(s.b.module(a, s.opt_kernel), "optimizer: AdamW");
    EXPECT_EQ(a.module_source[s.opt_kernel], ModuleSource::kOptimizerStep);
    EXPECT_EQ(a.phase[s.foreach_kernel], Phase::kOptimizer);
    EXPECT_EQ(s.b.module(a, s.foreach_kernel), "optimizer");

    EXPECT_EQ(a.phase[s.seed], Phase::kOther);
    ASSERT_FALSE(notes.lines.empty());
    EXPECT_NE(notes.lines.back().find("2 backward kernels (1 linked"), std::string::npos) << notes.lines.back();
  }
}

// A CUDA graph replay: one cudaGraphLaunch, every kernel of the graph with its correlation. The engine looks
// the launch's ranges up once for a run of its kernels; a kernel of another launch between them must not
// leak into the run, nor the run into it.
TEST(AttributionPhases, TheKernelsOfOneGraphLaunchAllGetWhatTheLaunchsRangesSay) {
  Builder b;
  b.range(RangeKind::kModule, "model", 0, 1000);
  b.tl.ranges.add(RangeKind::kAnnotation, RangeScope::kThread, b.tl.strings.intern("Optimizer.step#AdamW.step"),
                  b.tl.strings.intern("user_annotation"), kPid, kTid, 100, 400);
  b.range(RangeKind::kOperator, "aten::_foreach_add_", 150, 350);
  b.range(RangeKind::kModule, "head", 500, 900);
  b.range(RangeKind::kOperator, "aten::add", 550, 650);
  const std::uint64_t graph = b.next_corr++;
  b.tl.launches.add(b.tl.strings.intern("cudaGraphLaunch"), kPid, kTid, 200, 260, graph);
  auto graph_kernel = [&](std::int64_t gs) {
    auto i =
        b.tl.kernels.add(ActivityKind::kKernel, b.tl.strings.intern("multi_tensor_apply_kernel"), 0, 7, gs, gs + 10);
    b.tl.kernels.correlation[i] = graph;
    return i;
  };
  const std::vector<std::size_t> replay = {graph_kernel(1000), graph_kernel(1020)};
  const std::size_t between = b.kernel("add_kernel", 600, 1030, 1040, /*stream=*/8);
  const std::vector<std::size_t> rest = {graph_kernel(1040), graph_kernel(1060), graph_kernel(1080)};
  // A second replay, inside the module's operator.
  const std::uint64_t head_graph = b.next_corr++;
  b.tl.launches.add(b.tl.strings.intern("cudaGraphLaunch"), kPid, kTid, 610, 640, head_graph);
  std::vector<std::size_t> head_replay;
  for (std::int64_t gs : {1090, 1100}) {
    head_replay.push_back(b.tl.kernels.add(ActivityKind::kKernel, b.tl.strings.intern("add_kernel"), 0, 8, gs, gs + 5));
    b.tl.kernels.correlation[head_replay.back()] = head_graph;
  }

  AttributionTable a = attribute_timeline(b.tl, nullptr, AttributionOptions{});
  for (const auto& kernels : {replay, rest})
    for (std::size_t i : kernels) {
      SCOPED_TRACE(i);
      EXPECT_EQ(a.path[i], AttributionPath::kCorrelation);
      EXPECT_EQ(b.op(a, i), "aten::_foreach_add_");
      EXPECT_EQ(a.phase[i], Phase::kOptimizer);
      EXPECT_EQ(b.module(a, i), "optimizer: AdamW");
      EXPECT_EQ(a.module_source[i], ModuleSource::kOptimizerStep);
    }
  for (std::size_t i : {between, head_replay[0], head_replay[1]}) {
    SCOPED_TRACE(i);
    EXPECT_EQ(b.op(a, i), "aten::add");
    EXPECT_EQ(a.phase[i], Phase::kForward);
    EXPECT_EQ(b.module(a, i), "head");
    EXPECT_EQ(a.module_source[i], ModuleSource::kThreadRange);
  }
}

TEST(AttributionPhases, SequenceNumbersOfSeveralForwardThreadsNeedTheFlowsThreadMap) {
  // Two threads ran numbered forward operators with the same number: without a flow naming which
  // RecordFunction thread is which, the link would be a guess, so none is made.
  TrainingStep s(false);
  auto other = s.b.range(RangeKind::kOperator, "aten::addmm", 120, 290, /*tid=*/33);
  s.b.tl.ranges.sequence_nr[other] = 48;
  AttributionTable a = attribute_timeline(s.b.tl, nullptr, AttributionOptions{});
  EXPECT_EQ(a.phase[s.bwd_kernel], Phase::kBackward);
  EXPECT_EQ(a.forward_op[s.bwd_kernel], kNoString);
}
