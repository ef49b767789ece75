// Aggregation of matched counters per operator and module, derived figures, coverage and bottlenecks.
#include <gtest/gtest.h>

#include <cmath>

#include "opprof/metrics/aggregate.hpp"
#include "opprof/metrics/bottleneck.hpp"

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
