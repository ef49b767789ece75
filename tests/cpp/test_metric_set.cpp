#include <gtest/gtest.h>

#include "opprof/metrics/metric_set.hpp"
#include "opprof/util/error.hpp"

using namespace opprof;

TEST(MetricSet, DefaultSetIsValidAgainstTheGh100Catalog) {
  MetricSet set = default_metric_set();
  EXPECT_GE(set.metrics.size(), 18u);
  MetricCatalog cat = builtin_metric_catalog("gh100");
  ASSERT_GT(cat.entries.size(), 3000u);
  auto problems = validate_metric_names(set, cat);
  EXPECT_TRUE(problems.empty()) << problems.front().to_string();
}

TEST(MetricSet, DefaultSetCoversEveryBottleneckAxis) {
  MetricSet set = default_metric_set();
  for (const char* axis : {"time", "compute", "tensor", "fp32", "dram", "l1", "l2", "occupancy", "issue", "launch",
                           "spill"}) {
    bool found = false;
    for (const auto& m : set.metrics) found |= m.axis == axis;
    EXPECT_TRUE(found) << axis;
  }
}

TEST(MetricSet, ValidationRejectsUnknownNamesAndBadSuffixes) {
  MetricSet set = parse_metric_set(
      "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active\twmean\ttensor\n"
      "lts__t_sector_hit_rate.sum\twmean\tl2\n"
      "dram__bytes_read.sum.bogus\tsum\tdram\n"
      "dram__bytes_write.sum\tsum\tdram\n",
      "user.tsv");
  auto problems = validate_metric_names(set, builtin_metric_catalog("gh100"));
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_NE(problems[0].to_string().find("user.tsv:1: sm__pipe_tensor_op_gmma_cycles_active"), std::string::npos);
  EXPECT_NE(problems[0].to_string().find("unknown metric"), std::string::npos);
  EXPECT_NE(problems[1].to_string().find("Ratio"), std::string::npos);
  EXPECT_NE(problems[2].to_string().find("user.tsv:3:"), std::string::npos);
  // The same problems as fields, for callers that point at the line.
  EXPECT_EQ(problems[0].source, "user.tsv");
  EXPECT_EQ(problems[0].line, 1u);
  EXPECT_EQ(problems[0].metric, "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active");
  EXPECT_EQ(problems[0].message, "unknown metric for gh100 (not in its ncu catalog)");
  EXPECT_EQ(problems[1].line, 2u);
  EXPECT_EQ(problems[2].metric, "dram__bytes_read.sum.bogus");
}

TEST(MetricSet, ChipRowsReplaceTheirStarMetric) {
  MetricSet set = parse_metric_set(
      "a__x.sum\tsum\tdram\t*\n"
      "b__y.avg.pct_of_peak_sustained_active\twmean\ttensor\t*\n"
      "c__z.avg.pct_of_peak_sustained_active\twmean\ttensor\tgb100\tb__y.avg.pct_of_peak_sustained_active\tnew name\n",
      "t.tsv");
  auto gh = set.for_chip("gh100");
  ASSERT_EQ(gh.metrics.size(), 2u);
  EXPECT_EQ(gh.metrics[1].name, "b__y.avg.pct_of_peak_sustained_active");
  auto gb = set.for_chip("gb100");
  ASSERT_EQ(gb.metrics.size(), 2u);
  EXPECT_EQ(gb.metrics[1].name, "c__z.avg.pct_of_peak_sustained_active");
}

TEST(MetricSet, BadAggregateNamesTheLine) {
  try {
    parse_metric_set("# comment\na__x.sum\taverage\tdram\n", "mine.tsv");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.position().line, 2u);
    EXPECT_NE(std::string(e.what()).find("mine.tsv:2:1: unknown aggregate 'average'"), std::string::npos);
  }
}

TEST(MetricSet, ChipForDevice) {
  EXPECT_EQ(chip_for_device("NVIDIA H200", 9, 0), "gh100");
  EXPECT_EQ(chip_for_device("NVIDIA A100-SXM4-80GB", 8, 0), "ga100");
  EXPECT_EQ(chip_for_device("NVIDIA H100 80GB HBM3", 0, 0), "gh100");
  EXPECT_EQ(chip_for_device("Mystery GPU", 0, 0), "");
}

TEST(MetricSet, ChipForCaptureReadsEitherCapabilitySpelling) {
  EXPECT_EQ(chip_for_capture({{"device.0.name", "NVIDIA H200"}, {"device.0.compute_major", "9"},
                              {"device.0.compute_minor", "0"}}),
            "gh100");
  EXPECT_EQ(chip_for_capture({{"device.0.name", "GPU"}, {"device.0.cc", "8.6"}}), "ga102");
  EXPECT_EQ(chip_for_capture({{"device.0.cc", "8.0"}}), "ga100");
  EXPECT_EQ(chip_for_capture({{"device.0.name", "NVIDIA A100"}, {"device.0.compute_major", "x"}}), "ga100");
  EXPECT_EQ(chip_for_capture({}), "");
}
