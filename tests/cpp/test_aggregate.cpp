// Aggregation of matched counters per operator and module, derived figures, coverage and bottlenecks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "opprof/metrics/aggregate.hpp"
#include "opprof/metrics/bottleneck.hpp"
#include "opprof/util/error.hpp"

using namespace opprof;

namespace {

struct Fixture {
  Timeline tl;
  AttributionTable attr;
  NcuTable ncu;
  NcuMatch match;

  // Three kernels: two of "aten::mm" (durations 100 and 300 ns) in module "a", one unattributed (600 ns).
  Fixture() {
    auto add = [&](std::string_view name, std::int64_t s, std::int64_t e) {
      return tl.kernels.add(ActivityKind::kKernel, tl.strings.intern(name), 0, 7, s, e);
    };
    add("gemm", 0, 100);
    add("gemm", 200, 500);
    add("mystery", 600, 1200);
    tl.kernels.add(ActivityKind::kMemcpy, tl.strings.intern("Memcpy HtoD"), 0, 7, 1300, 5000);
    attr.resize(4);
    for (int i : {0, 1}) {
      attr.path[i] = AttributionPath::kCorrelation;
      attr.op[i] = tl.strings.intern("aten::mm");
      attr.module[i] = tl.strings.intern("a");
      attr.family[i] = tl.strings.intern("gemm");
    }
    attr.family[2] = tl.strings.intern("mystery");
    attr.reason[2] = tl.strings.intern("no launch");

    ncu.metric_names = {"gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
                        "dram__throughput.avg.pct_of_peak_sustained_elapsed", "launch__registers_per_thread",
                        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"};
    ncu.metric_units = {"ns", "byte", "byte", "%", "register/thread", "inst"};
    // Row 0 -> kernel 0, row 1 -> kernel 1.
    ncu.id = {0, 1};
    ncu.values = {90, 1000, 500, 80, 32, 100,  //
                  310, 3000, 1500, 40, 64, 300};
    match.ncu_row_for_kernel = {0, 1, kNoIndex, kNoIndex};
    match.kernel_for_ncu_row = {0, 1};
    match.matched = 2;
    match.unmatched_kernels = {2};
  }
};

}  // namespace

TEST(Aggregate, SumsWeightedMeansAndMaxima) {
  Fixture f;
  KernelMetrics km = collect_kernel_metrics(f.tl, f.ncu, f.match, default_metric_set());
  // The CSV has 6 of the default set's metrics; the rest are reported missing.
  EXPECT_EQ(km.metrics.size(), 6u);
  EXPECT_FALSE(km.missing.empty());
  Aggregates agg = aggregate(f.tl, f.attr, km);
  ASSERT_EQ(agg.operators.size(), 2u);
  const GroupStats& mystery = agg.operators[0];  // 600 ns, largest first
  EXPECT_EQ(mystery.key, "[unattributed]");
  EXPECT_EQ(mystery.bottleneck, "unmeasured");
  const GroupStats& mm = agg.operators[1];
  EXPECT_EQ(mm.key, "aten::mm");
  EXPECT_EQ(mm.kernels, 2u);
  EXPECT_EQ(mm.time_ns, 400);
  EXPECT_NEAR(mm.time_share, 400.0 / 1000.0, 1e-12);  // memcpy time is not kernel time
  auto metric = [&](std::string_view name) {
    for (std::size_t j = 0; j < km.metrics.size(); ++j)
      if (km.metrics[j].name == name) return mm.metric[j];
    return std::nan("");
  };
  EXPECT_DOUBLE_EQ(metric("dram__bytes_read.sum"), 4000);
  // Weighted by timeline duration (100 and 300 ns), not by ncu's replay duration.
  EXPECT_DOUBLE_EQ(metric("dram__throughput.avg.pct_of_peak_sustained_elapsed"), (80 * 100 + 40 * 300) / 400.0);
  EXPECT_DOUBLE_EQ(metric("launch__registers_per_thread"), 64);
  EXPECT_DOUBLE_EQ(mm.dram_bytes, 6000);
  EXPECT_DOUBLE_EQ(mm.dram_bandwidth_gbps, 6000.0 / 400.0);
  EXPECT_DOUBLE_EQ(mm.flops, 800);
  EXPECT_DOUBLE_EQ(mm.arithmetic_intensity, 800.0 / 6000.0);
  EXPECT_EQ(mm.counted_time_ns, 400);
  ASSERT_EQ(agg.modules.size(), 2u);
  EXPECT_EQ(agg.modules[0].key, "[no module]");
}

TEST(Aggregate, CoverageSplitsKernelTimeByPath) {
  Fixture f;
  Coverage c = compute_coverage(f.tl, f.attr, &f.match, 2);
  EXPECT_EQ(c.kernel_time_ns, 1000);
  EXPECT_EQ(c.kernels, 3u);
  EXPECT_EQ(c.attributed_ns, 400);
  EXPECT_EQ(c.module_attributed_ns, 400);
  EXPECT_EQ(c.by_path_ns[static_cast<int>(AttributionPath::kCorrelation)], 400);
  EXPECT_EQ(c.by_path_ns[static_cast<int>(AttributionPath::kNone)], 600);
  ASSERT_EQ(c.unattributed.size(), 1u);
  EXPECT_EQ(c.unattributed[0].family, "mystery");
  EXPECT_EQ(c.unattributed[0].reason, "no launch");
  EXPECT_EQ(c.unattributed[0].time_ns, 600);
  EXPECT_DOUBLE_EQ(c.pct(c.attributed_ns), 40.0);
  EXPECT_TRUE(c.has_ncu);
  EXPECT_EQ(c.ncu_matched, 2u);
  EXPECT_EQ(c.ncu_unmatched_kernels, 1u);
}

TEST(Bottleneck, ClassifiesByTheLimitingUnit) {
  BottleneckInput in{};
  in.kernels = 1;
  in.time_ns = 100000;
  in.has_counters = true;
  in.sm_pct = 20;
  in.memory_pct = 85;
  in.dram_pct = 82;
  in.tensor_pct = 0;
  in.l1_pct = 30;
  in.l2_pct = 50;
  in.occupancy_pct = 70;
  in.issue_pct = 20;
  EXPECT_EQ(classify_bottleneck(in).label, "dram-bound");
  in.dram_pct = 10;
  in.memory_pct = 20;
  in.tensor_pct = 75;
  in.sm_pct = 80;
  EXPECT_EQ(classify_bottleneck(in).label, "tensor-bound");
  in.tensor_pct = 0;
  EXPECT_EQ(classify_bottleneck(in).label, "compute-bound");
  in.sm_pct = 10;
  in.occupancy_pct = 12;
  in.issue_pct = 5;
  in.shared_mem_cap_pct = 12.5;  // one 8-warp block per SM: what keeps the occupancy at 12 %
  Bottleneck b = classify_bottleneck(in);
  EXPECT_EQ(b.label, "occupancy-limited");
  EXPECT_NE(b.why.find("occupancy 12%"), std::string::npos);
  in.time_ns = 2000;  // one 2 us kernel that leaves every unit idle
  EXPECT_EQ(classify_bottleneck(in).label, "launch-bound");
  in.has_counters = false;
  EXPECT_EQ(classify_bottleneck(in).label, "unmeasured");
}

TEST(Bottleneck, MissingCountersDoNotDecide) {
  BottleneckInput in{};
  in.kernels = 1;
  in.time_ns = 100000;
  in.has_counters = true;
  in.sm_pct = in.memory_pct = in.dram_pct = in.tensor_pct = in.l1_pct = in.l2_pct = in.occupancy_pct = in.issue_pct =
      std::nan("");
  in.sm_pct = 70;
  EXPECT_EQ(classify_bottleneck(in).label, "compute-bound");
}

// ---- weights, units, FLOPs ---------------------------------------------------------------------

namespace {

// Two kernels of one operator with the counters the weights and FLOPs need; values per kernel.
struct WeightFixture {
  Timeline tl;
  AttributionTable attr;
  NcuTable ncu;
  NcuMatch match;

  WeightFixture(std::vector<std::string> names, std::vector<std::string> units, std::vector<double> kernel0,
                std::vector<double> kernel1) {
    tl.kernels.add(ActivityKind::kKernel, tl.strings.intern("k"), 0, 7, 0, 100);
    tl.kernels.add(ActivityKind::kKernel, tl.strings.intern("k"), 0, 7, 200, 500);
    attr.resize(2);
    for (int i : {0, 1}) {
      attr.path[i] = AttributionPath::kCorrelation;
      attr.op[i] = tl.strings.intern("op");
      attr.family[i] = tl.strings.intern("k");
    }
    ncu.path = "capture.csv";
    ncu.metric_names = std::move(names);
    ncu.metric_units = std::move(units);
    ncu.units_line = 3;
    for (std::size_t m = 0; m < ncu.metric_names.size(); ++m) ncu.metric_unit_columns.push_back(10 * m + 1);
    ncu.id = {0, 1};
    ncu.values = kernel0;
    ncu.values.insert(ncu.values.end(), kernel1.begin(), kernel1.end());
    match.ncu_row_for_kernel = {0, 1};
    match.kernel_for_ncu_row = {0, 1};
    match.matched = 2;
  }
  GroupStats op(const MetricSet& set, KernelMetrics* out = nullptr) {
    KernelMetrics km = collect_kernel_metrics(tl, ncu, match, set);
    Aggregates agg = aggregate(tl, attr, km);
    if (out) *out = km;
    return agg.operators.at(0);
  }
};

double group_metric(const KernelMetrics& km, const GroupStats& g, std::string_view name) {
  for (std::size_t j = 0; j < km.metrics.size(); ++j)
    if (km.metrics[j].name == name) return g.metric[j];
  return std::nan("");
}

}  // namespace

TEST(Aggregate, MeansAreWeightedByTheirDeclaredWeights) {
  // Kernel 0: 100 ns, 1000 L2 sectors at 90 % hits, 10 instructions at 40 cycles each.
  // Kernel 1: 300 ns, 10 L2 sectors at 10 % hits, 1000 instructions at 4 cycles each.
  WeightFixture f({"gpu__time_duration.sum", "lts__t_sectors.sum", "lts__t_sector_hit_rate.pct",
                   "smsp__inst_issued.sum", "smsp__average_warp_latency_per_inst_issued.ratio",
                   "dram__throughput.avg.pct_of_peak_sustained_elapsed"},
                  {"ns", "sector", "%", "inst", "cycle", "%"},  //
                  {100, 1000, 90, 10, 40, 80},                  //
                  {300, 10, 10, 1000, 4, 40});
  KernelMetrics km;
  GroupStats g = f.op(default_metric_set(), &km);
  // The group's hit rate is its hits over its lookups, (900 + 1) / 1010, not the duration-weighted 30 %.
  EXPECT_DOUBLE_EQ(group_metric(km, g, "lts__t_sector_hit_rate.pct"), (90.0 * 1000 + 10.0 * 10) / 1010);
  // Cycles per issued instruction of the group: (400 + 4000) / 1010.
  EXPECT_DOUBLE_EQ(group_metric(km, g, "smsp__average_warp_latency_per_inst_issued.ratio"),
                   (40.0 * 10 + 4.0 * 1000) / 1010);
  // Percent-of-peak rates go by the timeline duration.
  EXPECT_DOUBLE_EQ(group_metric(km, g, "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
                   (80.0 * 100 + 40.0 * 300) / 400);
}

TEST(Aggregate, AMeanWhoseWeightTheCaptureLacksIsUnknown) {
  WeightFixture f({"l1tex__t_sector_hit_rate.pct"}, {"%"}, {90}, {10});
  KernelMetrics km;
  GroupStats g = f.op(default_metric_set(), &km);
  EXPECT_NE(std::find(km.missing.begin(), km.missing.end(), "l1tex__t_sectors.sum"), km.missing.end());
  EXPECT_TRUE(std::isnan(group_metric(km, g, "l1tex__t_sector_hit_rate.pct")));
}

TEST(Aggregate, AUnitOtherThanTheDeclaredOneIsRefusedAtItsCell) {
  WeightFixture f({"gpu__time_duration.sum", "dram__bytes_read.sum"}, {"ns", "sector"}, {100, 1}, {300, 2});
  try {
    f.op(default_metric_set());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.position().line, 3u);
    EXPECT_EQ(e.position().column, 11u);  // the second metric's unit cell
    EXPECT_NE(what.find("capture.csv:3:11: "), std::string::npos) << what;
    EXPECT_NE(what.find("\"dram__bytes_read.sum\" is in \"sector\""), std::string::npos) << what;
    EXPECT_NE(what.find("declares \"byte\""), std::string::npos) << what;
    EXPECT_NE(what.find("<built-in>:"), std::string::npos) << what;
  }
}

TEST(Aggregate, FlopsCountTensorCoreAndCudaCoreWorkByKind) {
  // A bf16 GEMM kernel and an FP32/FP16/FP64 SIMT kernel, 100 and 300 ns on the timeline, 1000 ns of
  // ncu duration in all.
  WeightFixture f({"gpu__time_duration.sum", "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
                   "sm__ops_path_tensor_src_fp16.sum", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
                   "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
                   "sm__sass_thread_inst_executed_op_hfma_pred_on.sum",
                   "sm__sass_thread_inst_executed_op_dfma_pred_on.sum", "dram__bytes_read.sum",
                   "dram__bytes_write.sum"},
                  {"ns", "", "", "inst", "inst", "inst", "inst", "byte", "byte"},
                  {400, 2e9, 0, 0, 0, 0, 0, 1e6, 1e6},  //
                  {600, 0, 0, 1000, 100, 10, 1, 1e3, 0});
  MetricSet set = default_metric_set().for_chip("gh100");
  GroupStats g = f.op(set);
  EXPECT_DOUBLE_EQ(g.tensor_flops, 2e9);      // the path counters count FLOPs already
  EXPECT_DOUBLE_EQ(g.fp32_flops, 2 * 1000 + 100);
  EXPECT_DOUBLE_EQ(g.fp16_flops, 4 * 10);     // packed HFMA2
  EXPECT_DOUBLE_EQ(g.fp64_flops, 2 * 1);
  EXPECT_DOUBLE_EQ(g.flops, 2e9 + 2100 + 40 + 2);
  EXPECT_DOUBLE_EQ(g.gflops, g.flops / 1000);  // FLOP per ns of ncu duration
  EXPECT_DOUBLE_EQ(g.tensor_gflops, 2e9 / 1000);
  EXPECT_DOUBLE_EQ(g.fp32_gflops, 2100.0 / 1000);
  EXPECT_DOUBLE_EQ(g.arithmetic_intensity, g.flops / (2e6 + 1e3));
  // Without the chip's rows the tensor counters are not in the set: tensor work is unknown, not zero.
  GroupStats generic = f.op(default_metric_set().for_chip("*"));
  EXPECT_EQ(generic.tensor_flops, -1);
  EXPECT_DOUBLE_EQ(generic.flops, 2100 + 40 + 2);
}

TEST(Aggregate, OccupancyCapsComeFromTheLaunchLimits) {
  // 256-thread blocks (8 warps) on a 64-warp SM: 1 block by shared memory, 3 by registers.
  WeightFixture f({"launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem", "launch__block_size",
                   "device__attribute_max_warps_per_multiprocessor"},
                  {"block", "block", "", ""}, {3, 1, 256, 64}, {3, 1, 256, 64});
  GroupStats g = f.op(default_metric_set());
  EXPECT_DOUBLE_EQ(g.shared_mem_occupancy_cap_pct, 12.5);
  EXPECT_DOUBLE_EQ(g.register_occupancy_cap_pct, 37.5);
}

// ---- bottleneck classes on the counters of kernels whose answer is known ------------------------

namespace {
BottleneckInput measured(std::int64_t mean_ns) {
  BottleneckInput in;
  in.kernels = 1;
  in.time_ns = mean_ns;
  in.has_counters = true;
  in.register_cap_pct = in.shared_mem_cap_pct = 100;
  return in;
}
}  // namespace

TEST(Bottleneck, StreamingCopyIsDramBound) {
  BottleneckInput in = measured(500000);
  in.sm_pct = 22, in.memory_pct = 92, in.dram_pct = 91, in.l1_pct = 30, in.l2_pct = 70, in.tensor_pct = 0;
  in.occupancy_pct = 85, in.issue_pct = 10, in.fp32_flops = 2.7e8, in.tensor_flops = 0;
  Bottleneck b = classify_bottleneck(in);
  EXPECT_EQ(b.label, "dram-bound");
  EXPECT_EQ(b.reason, "DRAM 91% of peak >= 60%");
  EXPECT_NE(b.why.find("Next: move fewer bytes"), std::string::npos) << b.why;
}

TEST(Bottleneck, Bf16GemmIsTensorBound) {
  BottleneckInput in = measured(1500000);
  in.sm_pct = 85, in.memory_pct = 55, in.dram_pct = 15, in.l1_pct = 50, in.l2_pct = 45, in.tensor_pct = 88;
  in.tensor_flops = 1.1e12, in.fp32_flops = 1e6;
  Bottleneck b = classify_bottleneck(in);
  EXPECT_EQ(b.label, "tensor-bound");
  EXPECT_EQ(b.reason, "tensor pipe 88% of peak >= 50%");
}

TEST(Bottleneck, Fp32SimtGemmIsComputeBoundWithTheTensorCoreHint) {
  // The first-match order of old called this l1-bound: shared memory feeding the FMAs is busier than the SM.
  BottleneckInput in = measured(3000000);
  in.sm_pct = 72, in.memory_pct = 80, in.dram_pct = 8, in.l1_pct = 80, in.l2_pct = 20, in.tensor_pct = 0;
  in.fma_pct = 74, in.fp32_flops = 1.37e11, in.tensor_flops = 0;
  Bottleneck b = classify_bottleneck(in);
  EXPECT_EQ(b.label, "compute-bound");
  EXPECT_EQ(b.reason, "FMA pipe 74% of peak >= 60%");
  EXPECT_EQ(b.advice.rfind("use the tensor cores (TF32/BF16)", 0), 0u) << b.advice;
  // Without the FMA pipe figure, a busy SM above L1 and L2 decides; the FLOP mix still gives the hint.
  in.fma_pct = std::nan("");
  in.l1_pct = 55;
  b = classify_bottleneck(in);
  EXPECT_EQ(b.label, "compute-bound");
  EXPECT_NE(b.advice.find("TF32/BF16"), std::string::npos);
  // Integer-heavy SIMT work is compute-bound without the hint.
  in.fp32_flops = 0;
  b = classify_bottleneck(in);
  EXPECT_EQ(b.label, "compute-bound");
  EXPECT_EQ(b.advice.find("TF32/BF16"), std::string::npos) << b.advice;
}

TEST(Bottleneck, TinyKernelIsLaunchBound) {
  BottleneckInput in = measured(1800);
  in.sm_pct = 0.5, in.memory_pct = 1, in.dram_pct = 0.2, in.occupancy_pct = 2, in.issue_pct = 0.1;
  Bottleneck b = classify_bottleneck(in);
  EXPECT_EQ(b.label, "launch-bound");
  EXPECT_NE(b.reason.find("mean kernel 1.8 us < 5 us"), std::string::npos) << b.reason;
}

TEST(Bottleneck, DependentLoadChainIsLatencyBoundEvenAtLowOccupancy) {
  // One warp per SM chasing pointers: occupancy is tiny because the grid is, not because of resources.
  BottleneckInput in = measured(3000000);
  in.sm_pct = 1, in.memory_pct = 6, in.dram_pct = 5, in.l1_pct = 2, in.l2_pct = 6, in.occupancy_pct = 1.6;
  in.issue_pct = 0.3;
  Bottleneck b = classify_bottleneck(in);
  EXPECT_EQ(b.label, "latency-bound");
  EXPECT_NE(b.reason.find("not capped by registers or shared memory"), std::string::npos) << b.reason;
  EXPECT_NE(b.why.find("occupancy 2%"), std::string::npos) << b.why;
}

TEST(Bottleneck, SharedMemoryCappedKernelIsOccupancyLimited) {
  BottleneckInput in = measured(900000);
  in.sm_pct = 8, in.memory_pct = 40, in.dram_pct = 38, in.l1_pct = 15, in.l2_pct = 35, in.occupancy_pct = 12;
  in.issue_pct = 4, in.register_cap_pct = 100, in.shared_mem_cap_pct = 12.5;
  Bottleneck b = classify_bottleneck(in);
  EXPECT_EQ(b.label, "occupancy-limited");
  EXPECT_EQ(b.reason.rfind("shared memory cap occupancy at 12.5%", 0), 0u) << b.reason;
  EXPECT_NE(b.advice.find("less shared memory per block"), std::string::npos) << b.advice;
  // The few warps the cap allows drive L2 hard with their misses: still the cap that limits them.
  in.l2_pct = 80;
  EXPECT_EQ(classify_bottleneck(in).label, "occupancy-limited");
  in.register_cap_pct = 25, in.shared_mem_cap_pct = 100, in.occupancy_pct = 24;
  b = classify_bottleneck(in);
  EXPECT_EQ(b.label, "occupancy-limited");
  EXPECT_NE(b.advice.find("fewer registers per thread"), std::string::npos) << b.advice;
  // Without the cap reached (the grid holds fewer warps) or with the warps issuing, the cap is not it.
  in.occupancy_pct = 10;
  EXPECT_EQ(classify_bottleneck(in).label, "l2-bound");
  in.l2_pct = 35;
  b = classify_bottleneck(in);
  EXPECT_EQ(b.label, "latency-bound");
  EXPECT_NE(b.reason.find("the registers cap of 25.0% is not what holds the warps back"), std::string::npos)
      << b.reason;
  in.occupancy_pct = 24, in.issue_pct = 45;
  EXPECT_EQ(classify_bottleneck(in).label, "latency-bound");
  // A busy unit still decides first: the cap is not what limits a saturated DRAM.
  in.issue_pct = 4, in.dram_pct = 75;
  EXPECT_EQ(classify_bottleneck(in).label, "dram-bound");
}
