#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "opprof/ingest/ncu_csv.hpp"
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

TEST(MetricSet, QuickAndFullSetsAreValidAgainstTheGh100CatalogAndBracketTheDefault) {
  const MetricSet def = load_metric_set("default");
  const MetricSet quick = load_metric_set("quick");
  const MetricSet full = load_metric_set("full");
  EXPECT_EQ(def.names(), default_metric_set().names());
  const MetricCatalog cat = builtin_metric_catalog("gh100");
  for (const MetricSet* set : {&quick, &full}) {
    auto problems = validate_metric_names(set->for_chip("gh100"), cat);
    EXPECT_TRUE(problems.empty()) << set->source << ": " << problems.front().to_string();
  }
  auto names = [](const MetricSet& s) {
    const std::vector<std::string> v = s.for_chip("gh100").names();
    return std::set<std::string>(v.begin(), v.end());
  };
  const auto q = names(quick), d = names(def), f = names(full);
  EXPECT_TRUE(std::includes(d.begin(), d.end(), q.begin(), q.end()));
  EXPECT_TRUE(std::includes(f.begin(), f.end(), d.begin(), d.end()));
  EXPECT_GT(f.size(), d.size());
  EXPECT_LE(q.size(), 10u);  // one or two replay passes: duration, throughputs, occupancy, launch figures
  for (const char* m : {"gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                        "sm__warps_active.avg.pct_of_peak_sustained_active"})
    EXPECT_TRUE(q.count(m)) << m;
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
      "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active\twmean\ttensor\t*\t\t\t%\tduration\n"
      "lts__t_sector_hit_rate.sum\twmean\tl2\t*\t\t\t%\tduration\n"
      "dram__bytes_read.sum.bogus\tsum\tdram\t*\t\t\tbyte\n"
      "dram__bytes_write.sum\tsum\tdram\t*\t\t\tbyte\n",
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
      "a__x.sum\tsum\tdram\t*\t\t\tbyte\n"
      "b__y.avg.pct_of_peak_sustained_active\twmean\ttensor\t*\t\t\t%\tduration\n"
      "c__z.avg.pct_of_peak_sustained_active\twmean\ttensor\tgb100\tb__y.avg.pct_of_peak_sustained_active\tnew name\t%\t"
      "duration\n",
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

TEST(MetricSet, EveryDefaultMetricDeclaresItsUnitAndEveryMeanItsWeight) {
  for (const char* chip : {"*", "gh100", "ga100", "ga102", "ad102", "gb100"}) {
    MetricSet set = default_metric_set().for_chip(chip);
    for (const MetricSpec& m : set.metrics) {
      if (m.aggregate != Aggregate::kWeightedMean) {
        EXPECT_TRUE(m.weight.empty()) << m.name;
        continue;
      }
      ASSERT_FALSE(m.weight.empty()) << m.name;
      if (m.weight == kDurationWeight) continue;
      const MetricSpec* w = set.find(m.weight);
      ASSERT_NE(w, nullptr) << chip << ": " << m.name << " is weighted by " << m.weight;
      EXPECT_EQ(w->aggregate, Aggregate::kSum) << m.weight;
    }
  }
  // Ratios of a count go by that count, not by time.
  MetricSet set = default_metric_set();
  EXPECT_EQ(set.find("lts__t_sector_hit_rate.pct")->weight, "lts__t_sectors.sum");
  EXPECT_EQ(set.find("l1tex__t_sector_hit_rate.pct")->weight, "l1tex__t_sectors.sum");
  EXPECT_EQ(set.find("smsp__average_warp_latency_per_inst_issued.ratio")->weight, "smsp__inst_issued.sum");
  EXPECT_EQ(set.find("dram__throughput.avg.pct_of_peak_sustained_elapsed")->weight, kDurationWeight);
}

TEST(MetricSet, DefaultUnitsAreWhatNcuPrintsOnTheH200) {
  // Launch and device figures are not in the catalog; an H200 capture's units row says what ncu prints.
  NcuTable t = read_ncu_csv(std::string(OPPROF_FIXTURES_DIR) + "/gpt2_eager/ncu.csv.gz");
  std::size_t checked = 0;
  for (const MetricSpec& m : default_metric_set().for_chip("gh100").metrics) {
    std::size_t col = t.metric_index(m.name);
    if (col == NcuTable::npos) continue;
    EXPECT_EQ(t.metric_units[col], m.unit) << m.name;
    ++checked;
  }
  EXPECT_GE(checked, 24u);  // the capture predates the counters added in format version 2
}

TEST(MetricSet, UnitsAndWeightsAreRequiredWhereTheyApply) {
  auto error = [](const std::string& text) {
    try {
      parse_metric_set(text, "m.tsv");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("a__x.sum\tsum\tdram\t*\t\tbytes\n").find("m.tsv:1:28: metric a__x.sum declares no unit"),
            std::string::npos)
      << error("a__x.sum\tsum\tdram\t*\t\tbytes\n");
  std::string no_weight = error("a__x.pct\twmean\tl2\t*\t\thit rate\t%\n");
  EXPECT_NE(no_weight.find("m.tsv:1:"), std::string::npos) << no_weight;
  EXPECT_NE(no_weight.find("declares no weight"), std::string::npos) << no_weight;
  std::string unknown = error("a__x.pct\twmean\tl2\t*\t\thit rate\t%\tb__sectors.sum\n");
  EXPECT_NE(unknown.find("m.tsv:1:33: the weight of a__x.pct is b__sectors.sum, which is not a metric"),
            std::string::npos)
      << unknown;
  std::string not_sum = error("b__y.max\tmax\tl2\t*\t\t\tblock\na__x.pct\twmean\tl2\t*\t\t\t%\tb__y.max\n");
  EXPECT_NE(not_sum.find("a weight must be a sum"), std::string::npos) << not_sum;
  std::string weighted_sum = error("b__y.sum\tsum\tl2\t*\t\t\tsector\tduration\n");
  EXPECT_NE(weighted_sum.find("takes no weight"), std::string::npos) << weighted_sum;
  MetricSet ok = parse_metric_set("b__y.sum\tsum\tl2\t*\t\t\tsector\na__x.pct\twmean\tl2\t*\t\t\t%\tb__y.sum\n"
                                  "c__z.ratio\twmean\tissue\t*\t\t\t-\tduration\n",
                                  "m.tsv");
  EXPECT_EQ(ok.find("a__x.pct")->weight, "b__y.sum");
  EXPECT_EQ(ok.find("c__z.ratio")->unit, "");  // '-': ncu prints no unit
}

TEST(MetricSet, ChipRowsTakeOverTheWeightOfWhatTheyReplace) {
  MetricSet set = parse_metric_set(
      "a__sectors.sum\tsum\tl2\t*\t\t\tsector\n"
      "a__hit.pct\twmean\tl2\t*\t\t\t%\ta__sectors.sum\n"
      "b__sectors.sum\tsum\tl2\tgb100\ta__sectors.sum\t\tsector\n",
      "m.tsv");
  EXPECT_EQ(set.for_chip("gh100").find("a__hit.pct")->weight, "a__sectors.sum");
  EXPECT_EQ(set.for_chip("gb100").find("a__hit.pct")->weight, "b__sectors.sum");
}

TEST(MetricSet, CheckRefusesAUnitOtherThanTheCatalogs) {
  MetricSet set = parse_metric_set(
      "lts__t_sectors.sum\tsum\tl2\t*\t\t\tbyte\n"
      "lts__t_sector_hit_rate.pct\twmean\tl2\t*\t\t\t%\tlts__t_sectors.sum\n"
      "sm__ops_path_tensor_src_bf16_dst_fp32.sum\tsum\ttensor\t*\t\t\t-\n",
      "u.tsv");
  auto problems = validate_metric_names(set, builtin_metric_catalog("gh100"));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].to_string().find("u.tsv:1: lts__t_sectors.sum: declares unit 'byte', ncu prints 'sector'"),
            std::string::npos)
      << problems[0].to_string();
}
