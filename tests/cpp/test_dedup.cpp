// Layer dedup on real H200 captures: the plan from attributed timelines (inference and training), the
// propagation from a deduplicated ncu CSV (simulated by dropping the duplicates' rows from a full CSV of the
// same window), the marks in the database, and how close the deduplicated per-operator metrics are to the
// full ones.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "opprof/dedup/dedup_plan.hpp"
#include "opprof/dedup/propagation.hpp"
#include "opprof/dedup/structure_file.hpp"
#include "opprof/pipeline/attribute.hpp"
#include "opprof/pipeline/capture_plan.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"
#include "profile_fixture.hpp"
#include "cli_harness.hpp"

namespace opprof {
namespace {

using testing::TempDir;

using opprof::test::fixture;

// GPT-2 small's twelve blocks, as python/opprof/structure.py writes them for examples/gpt2.py (its
// classes; the per-module part of the file is for people and the engine does not read it).
std::string gpt2_structure_json(const std::string& runtime) {
  std::string instances;
  for (int i = 0; i < 12; ++i) instances += fmt::format("{}\"transformer.h.{}\"", i ? ", " : "", i);
  return fmt::format(R"({{"format": "opprof-structure", "version": 1, "root": "GPT2LMHeadModel", "runtime": "{}",
    "modules": [], "classes": [{{"signature": "b10c", "type": "GPT2Block", "size": 12, "instances": [{}]}}]}})",
                     runtime, instances);
}

// ncu's launch configuration: the function name without templates, grid, block, shared memory per block.
// A launch configuration as ncu keys it: the function name without templates (--kernel-name-base function, ncu's
// default) or the mangled name (--kernel-name-base mangled), grid, block, shared memory.
std::string launch_config(const Timeline& tl, std::uint32_t k, bool mangled = false) {
  const Dim3 g = tl.kernels.grid[k], b = tl.kernels.block[k];
  const std::string name = mangled ? std::string(tl.str(tl.kernels.mangled[k] != kNoString ? tl.kernels.mangled[k]
                                                                                            : tl.kernels.name[k]))
                                   : kernel_match_name(tl.str(tl.kernels.name[k]));
  return fmt::format("{} {},{},{} {},{},{} {}", name, g.x, g.y, g.z, b.x, b.y, b.z, tl.kernels.shared_mem_bytes[k]);
}

std::string write_file(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

AttributeResult attribute(const std::string& trace, const std::string& ncu = "", const std::string& inductor = "",
                          DedupRequest dedup = {}) {
  AttributeRequest r;
  r.trace = trace;
  r.ncu = ncu;
  r.inductor = inductor;
  r.dedup = std::move(dedup);
  return attribute_capture(r);
}

// The ncu CSV pass B would have written under the plan: the full CSV without the rows of the kernels the
// plan does not replay (rows the full match left unmatched stay: they would be replayed too).
std::string deduplicated_csv(const AttributeResult& full, const DedupPlan& plan, const std::string& csv_path,
                             const TempDir& dir) {
  std::set<std::uint64_t> drop;
  for (std::size_t row = 0; row < full.ncu->rows(); ++row) {
    const std::uint32_t k = full.match->kernel_for_ncu_row[row];
    if (k != kNoIndex && !plan.replayed[k]) drop.insert(full.ncu->line[row]);
  }
  const std::string text = read_file(csv_path);
  std::string out;
  std::uint64_t line = 0;
  for (std::string_view l : split_lines(text)) {
    if (!drop.count(++line)) out += std::string(l) + "\n";
  }
  EXPECT_EQ(drop.size(), plan.kernels_propagated);
  return write_file(dir, "ncu_dedup.csv", out);
}

struct EagerGpt2 : ::testing::Test {
  TempDir dir;
  std::string trace = fixture("gpt2_eager/trace.json.gz"), csv = fixture("gpt2_eager/ncu.csv.gz");
  std::string structure = write_file(dir, "opprof_structure.json", gpt2_structure_json("eager_inputs"));
  DedupRequest request(int verify = 0) const {
    return {DedupMode::kLayers, DedupSelection::kNvtxModules, verify, structure};
  }
};

TEST_F(EagerGpt2, PlanReplaysOneBlockAndEverythingOutsideTheBlocks) {
  AttributeResult a = attribute(trace);
  const DedupPlan p = build_dedup_plan(a.capture.timeline, a.attribution, request());
  ASSERT_EQ(p.classes.size(), 1u);
  const DedupClass& c = p.classes[0];
  ASSERT_EQ(c.instances.size(), 12u);
  EXPECT_EQ(c.instances[0].path, "transformer.h.0");
  EXPECT_TRUE(c.instances[0].representative);
  const std::size_t per_block = c.instances[0].kernels.size();
  EXPECT_GT(per_block, 5u);
  for (const DedupInstance& i : c.instances) {
    EXPECT_EQ(i.kernels.size(), per_block) << i.path;
    EXPECT_TRUE(i.reason.empty()) << i.path << ": " << i.reason;
  }
  EXPECT_EQ(p.kernels_propagated, 11 * per_block);
  EXPECT_EQ(p.kernels_replayed + p.kernels_propagated, p.kernels);
  EXPECT_EQ(p.skip_modules.size(), 11u);
  EXPECT_EQ(p.instances_in_full, 0u);
  // Each duplicate's kernel takes the counters of the representative's kernel at the same position, of the
  // same identity.
  for (std::size_t i = 1; i < 12; ++i)
    for (std::size_t pos = 0; pos < per_block; ++pos) {
      const std::uint32_t k = c.instances[i].kernels[pos];
      EXPECT_EQ(p.counters_from[k], c.instances[0].kernels[pos]);
      EXPECT_EQ(kernel_identity_text(a.capture.timeline, k), kernel_identity_text(a.capture.timeline, p.counters_from[k]));
      EXPECT_FALSE(p.replayed[k]);
    }
}

TEST_F(EagerGpt2, PropagatedCountersAreMarkedAndEqualTheirRepresentatives) {
  const AttributeResult full = attribute(trace, csv);
  const DedupPlan plan = build_dedup_plan(full.capture.timeline, full.attribution, request());
  const std::string dedup_csv = deduplicated_csv(full, plan, csv, dir);
  AttributeRequest r;
  r.trace = trace;
  r.ncu = dedup_csv;
  r.dedup = request();
  r.output = dir.file("dedup.db");
  const AttributeResult d = attribute_capture(r);
  ASSERT_TRUE(d.dedup);
  EXPECT_EQ(d.propagation.propagated, plan.kernels_propagated);
  EXPECT_EQ(d.propagation.without_source, 0u);
  EXPECT_TRUE(d.match->unmatched_kernels.empty());
  EXPECT_EQ(d.match->matched, plan.kernels_replayed);

  // In the database: every propagated value names its source and equals the source's value.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(r.output.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto scalar = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
    const std::int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  };
  EXPECT_EQ(scalar("SELECT count(DISTINCT kernel_id) FROM kernel_metrics WHERE counters_from IS NOT NULL"),
            static_cast<std::int64_t>(plan.kernels_propagated));
  EXPECT_EQ(scalar("SELECT count(*) FROM kernel_metrics d JOIN kernel_metrics s ON s.kernel_id = d.counters_from "
                   "AND s.metric_id = d.metric_id WHERE d.value != s.value OR s.counters_from IS NOT NULL"),
            0);
  EXPECT_EQ(scalar("SELECT count(*) FROM kernel_metrics d LEFT JOIN kernel_metrics s ON s.kernel_id = "
                   "d.counters_from AND s.metric_id = d.metric_id WHERE d.counters_from IS NOT NULL AND s.value IS NULL"),
            0);
  EXPECT_EQ(scalar("SELECT count(*) FROM dedup_instances WHERE representative = 1"), 1);
  EXPECT_EQ(scalar("SELECT count(*) FROM dedup_instances"), 12);
  sqlite3_close(db);

  const ProfileDedup pd = ProfileReader(r.output).dedup();
  EXPECT_TRUE(pd.active);
  EXPECT_EQ(pd.mode, "layers");
  EXPECT_EQ(pd.kernels_propagated, plan.kernels_propagated);
  EXPECT_EQ(pd.kernels_replayed, plan.kernels_replayed);
  EXPECT_EQ(pd.classes, 1u);
  EXPECT_EQ(pd.instances, 12u);
}

// The largest relative difference of the key figures over the operators of two profiles of one window,
// among operators with at least min_share of the kernel time.
double worst_operator_deviation(const AttributeResult& full, const AttributeResult& dedup, double min_share,
                                std::string* where, bool same_timeline = true) {
  const KernelMetrics& km = full.kernel_metrics;
  std::vector<std::size_t> key;
  for (std::size_t m = 0; m < km.metrics.size(); ++m) {
    const std::string& n = km.metrics[m].name;
    if (n.starts_with("sm__throughput") || n.starts_with("dram__throughput") || n.starts_with("sm__warps_active") ||
        n.starts_with("sm__pipe_tensor_op_hmma") || n.starts_with("gpu__compute_memory_throughput"))
      key.push_back(m);
  }
  EXPECT_EQ(key.size(), 5u);
  std::map<std::string, const GroupStats*> by_key;
  for (const GroupStats& g : dedup.aggregates.operators) by_key[g.key] = &g;
  double worst = 0;
  for (const GroupStats& g : full.aggregates.operators) {
    if (g.time_share < min_share) continue;
    const GroupStats* o = by_key.at(g.key);
    EXPECT_EQ(o->kernels, g.kernels);
    if (same_timeline) {
      EXPECT_EQ(o->time_ns, g.time_ns);
    }
    for (std::size_t m : key) {
      const double a = g.metric[m], b = o->metric[m];
      if (std::isnan(a)) continue;
      // Percentages near zero (an idle tensor pipe) differ by noise: 0.5 points of peak is the floor.
      const double floor = km.metrics[m].unit == "%" ? 0.5 : 1.0;
      const double rel = std::abs(a - b) / std::max(std::abs(a), floor);
      if (rel > worst) {
        worst = rel;
        *where = fmt::format("{} {}: {} (full) vs {} (dedup)", g.key, km.metrics[m].name, a, b);
      }
    }
    // DRAM bytes: read + write (the write side alone is a few KB where outputs stay in the 50 MB L2, and
    // such a sum varies by more than 5 % between two replays of one kernel); 1 MB is the floor.
    if (g.dram_bytes >= 0) {
      const double rel = std::abs(g.dram_bytes - o->dram_bytes) / std::max(g.dram_bytes, 1e6);
      if (rel > worst) {
        worst = rel;
        *where = fmt::format("{} DRAM bytes: {} (full) vs {} (dedup)", g.key, g.dram_bytes, o->dram_bytes);
      }
    }
  }
  return worst;
}

// The done-when figure of issue 14 on CPU: each operator's key metrics with dedup vs without. Both
// selections; per-launch-config replays less (it also dedups kernels outside the blocks) and shares one
// kernel's counters among launches of one configuration inside a block too.
TEST_F(EagerGpt2, DeduplicatedOperatorMetricsAreWithinFivePercentOfTheFullCaptureForTheMainOperators) {
  const AttributeResult full = attribute(trace, csv);
  for (DedupSelection selection :
       {DedupSelection::kNvtxModules, DedupSelection::kPerLaunchConfigMangled, DedupSelection::kPerLaunchConfig}) {
    DedupRequest req = request();
    req.selection = selection;
    const DedupPlan plan = build_dedup_plan(full.capture.timeline, full.attribution, req);
    const AttributeResult d = attribute(trace, deduplicated_csv(full, plan, csv, dir), "", req);
    std::string where_all, where_main;
    const double all = worst_operator_deviation(full, d, 0.0, &where_all);
    const double main_ops = worst_operator_deviation(full, d, 0.05, &where_main);
    std::printf("eager GPT-2, %s: %llu of %llu kernels replayed (%.1fx fewer); worst operator key-metric difference "
                "%.2f %% over all operators (%s), %.2f %% over those with >= 5 %% of the time (%s)\n",
                to_string(selection), static_cast<unsigned long long>(plan.kernels_replayed),
                static_cast<unsigned long long>(plan.kernels), double(plan.kernels) / double(plan.kernels_replayed),
                100 * all, where_all.c_str(), 100 * main_ops, where_main.c_str());
    EXPECT_LE(main_ops, 0.05) << where_main;
    // With the NVTX selection every kernel of the representative is measured: the small elementwise
    // operators differ by what two replays of identical kernels differ by (6.4 % here), held as a ceiling.
    // per_launch_config shares one launch's counters among the template instantiations of a configuration
    // (elementwise tanh takes add's): no ceiling for the small operators there (docs/dedup.md).
    if (selection == DedupSelection::kNvtxModules) {
      EXPECT_LE(all, 0.07) << where_all;
    }
    EXPECT_EQ(d.propagation.without_source, 0u);
  }
}

TEST_F(EagerGpt2, VerifyDuplicatesAreReplayedAndComparedWithTheirRepresentative) {
  const AttributeResult full = attribute(trace, csv);
  const DedupPlan plan = build_dedup_plan(full.capture.timeline, full.attribution, request(3));
  std::size_t verify = 0;
  for (const DedupInstance& i : plan.classes[0].instances) verify += i.verify;
  EXPECT_EQ(verify, 3u);
  EXPECT_EQ(plan.skip_modules.size(), 8u);
  const AttributeResult d = attribute(trace, deduplicated_csv(full, plan, csv, dir), "", request(3));
  ASSERT_FALSE(d.dedup_deviation.empty());
  for (const MetricDeviation& m : d.dedup_deviation) {
    if (m.pairs == 0) continue;
    EXPECT_EQ(m.pairs % 3, 0u) << m.metric;  // each verify instance has the representative's kernel count
    EXPECT_GE(m.max_rel, m.median_rel);
    if (m.metric.starts_with("sm__throughput") || m.metric.starts_with("dram__throughput")) {
      EXPECT_LE(m.median_rel, 0.05) << m.metric;
    }
  }
}

TEST(DedupPlan, TrainingStepDeduplicatesForwardAndBackwardKernelsOfEachBlock) {
  TempDir dir;
  const std::string structure = write_file(dir, "s.json", gpt2_structure_json("eager_inputs"));
  AttributeResult a = attribute(fixture("train/gpt2_eager/tracer/trace.opprof"));
  const DedupPlan p = build_dedup_plan(a.capture.timeline, a.attribution,
                                       {DedupMode::kLayers, DedupSelection::kNvtxModules, 0, structure});
  ASSERT_EQ(p.classes.size(), 1u);
  const DedupInstance& rep = p.classes[0].instances[0];
  std::size_t forward = 0, backward = 0;
  for (std::uint32_t k : rep.kernels) {
    forward += a.attribution.phase[k] == Phase::kForward;
    backward += a.attribution.phase[k] == Phase::kBackward;
  }
  EXPECT_GT(forward, 5u);
  EXPECT_GT(backward, forward);  // a block's backward launches more kernels than its forward
  std::size_t propagated_instances = 0;
  for (const DedupInstance& i : p.classes[0].instances) propagated_instances += !i.replayed_in_full;
  std::printf("GPT-2 training step: %llu of %llu kernels replayed (%.1fx fewer), %zu of 11 duplicates propagated\n",
              static_cast<unsigned long long>(p.kernels_replayed), static_cast<unsigned long long>(p.kernels),
              double(p.kernels) / double(p.kernels_replayed), propagated_instances);
  EXPECT_GE(propagated_instances, 10u);
  EXPECT_EQ(p.kernels_replayed + p.kernels_propagated, p.kernels);
  EXPECT_GE(double(p.kernels) / double(p.kernels_replayed), 4.5);
  // By launch configuration the kernels outside the blocks dedup too: AdamW's multi-tensor kernels, the
  // backward kernels attribution leaves without a module (bias-gradient sums, gradient accumulation).
  const DedupPlan c = build_dedup_plan(a.capture.timeline, a.attribution,
                                       {DedupMode::kLayers, DedupSelection::kPerLaunchConfig, 0, structure});
  std::printf("GPT-2 training step, per_launch_config: %llu of %llu kernels replayed (%.1fx fewer), launch count %d, "
              "%llu other work\n",
              static_cast<unsigned long long>(c.kernels_replayed), static_cast<unsigned long long>(c.kernels),
              double(c.kernels) / double(c.kernels_replayed), c.launch_count,
              static_cast<unsigned long long>(c.kernels_other_work));
  for (const std::string& n : c.notes) std::printf("  %s\n", n.c_str());
  // Keyed by the mangled name (the default), template instantiations are configurations of their own.
  const DedupPlan m = build_dedup_plan(a.capture.timeline, a.attribution,
                                       {DedupMode::kLayers, DedupSelection::kPerLaunchConfigMangled, 0, structure});
  std::printf("GPT-2 training step, per_launch_config_mangled: %llu of %llu kernels replayed (%.1fx fewer), launch "
              "count %d, %llu other work\n",
              static_cast<unsigned long long>(m.kernels_replayed), static_cast<unsigned long long>(m.kernels),
              double(m.kernels) / double(m.kernels_replayed), m.launch_count,
              static_cast<unsigned long long>(m.kernels_other_work));
  // The function name lumps template instantiations of other work under one configuration: pass A's durations
  // tell them apart, and reaching them raises ncu's launch count, so the mangled key replays fewer.
  EXPECT_GT(c.launch_count, 1);
  EXPECT_EQ(m.launch_count, 1);
  EXPECT_LT(m.kernels_replayed, c.kernels_replayed);
  EXPECT_EQ(m.kernels_replayed + m.kernels_propagated, m.kernels);
  EXPECT_GE(double(m.kernels) / double(m.kernels_replayed), 8.0);
}

TEST(DedupPlan, AnInstanceLaunchingOtherKernelsIsReplayedInFullAndSaysWhy) {
  TempDir dir;
  const std::string structure = write_file(dir, "s.json", gpt2_structure_json("eager_inputs"));
  AttributeResult a = attribute(fixture("gpt2_eager/trace.json.gz"));
  // Block 5 launches one kernel less than the others.
  const DedupPlan p0 = build_dedup_plan(a.capture.timeline, a.attribution,
                                        {DedupMode::kLayers, DedupSelection::kNvtxModules, 0, structure});
  const std::uint32_t dropped = p0.classes[0].instances[5].kernels.back();
  a.attribution.module[dropped] = kNoString;
  const DedupPlan p = build_dedup_plan(a.capture.timeline, a.attribution,
                                       {DedupMode::kLayers, DedupSelection::kNvtxModules, 0, structure});
  const DedupInstance& odd = p.classes[0].instances[5];
  EXPECT_EQ(odd.path, "transformer.h.5");
  EXPECT_TRUE(odd.replayed_in_full);
  EXPECT_NE(odd.reason.find("differs from the representative's (transformer.h.0)"), std::string::npos) << odd.reason;
  EXPECT_EQ(p.instances_in_full, 1u);
  EXPECT_EQ(p.skip_modules.size(), 10u);
  for (std::uint32_t k : odd.kernels) EXPECT_TRUE(p.replayed[k]);
}

TEST(DedupPlan, KernelSignaturesReplayTheFirstLaunchOfEachConfiguration) {
  AttributeResult a = attribute(fixture("gpt2_compiled/trace.json.gz"), "", fixture("gpt2_compiled/inductor"));
  const Timeline& tl = a.capture.timeline;
  for (const DedupSelection key : {DedupSelection::kPerLaunchConfig, DedupSelection::kPerLaunchConfigMangled}) {
    const bool mangled = key == DedupSelection::kPerLaunchConfigMangled;
    const DedupPlan p = plan_kernel_dedup(tl, 1, key);
    EXPECT_EQ(p.selection, key);
    std::map<std::string, std::uint32_t> first;
    std::map<std::string, int> seen;
    for (const auto& process : kernels_in_launch_order(tl))
      for (std::uint32_t k : process) {
        const std::string sig = launch_config(tl, k, mangled);
        const int n = seen[sig]++;
        if (n == 0) first[sig] = k;
        EXPECT_EQ(bool(p.replayed[k]), n <= 1) << sig;  // the first and, with verify 1, the second launch
        EXPECT_EQ(p.counters_from[k], n <= 1 ? kNoIndex : first[sig]);
        EXPECT_EQ(p.verify_against[k], n == 1 ? first[sig] : kNoIndex);
      }
    EXPECT_LT(p.kernels_replayed, p.kernels);
    std::vector<std::string> args = {"--filter-mode", "per-launch-config", "--launch-count", "2"};
    if (mangled) args.insert(args.end(), {"--kernel-name-base", "mangled"});
    EXPECT_EQ(ncu_selection_args(p), args);
  }
  // The mangled key tells template instantiations apart: on the eager capture it replays more than the
  // function name's key.
  AttributeResult e = attribute(fixture("gpt2_eager/trace.json.gz"));
  const DedupPlan by_function = plan_kernel_dedup(e.capture.timeline, 0, DedupSelection::kPerLaunchConfig);
  const DedupPlan by_mangled = plan_kernel_dedup(e.capture.timeline, 0, DedupSelection::kPerLaunchConfigMangled);
  EXPECT_GT(by_mangled.kernels_replayed, by_function.kernels_replayed);
  EXPECT_THROW(plan_kernel_dedup(e.capture.timeline, 0, DedupSelection::kNvtxModules), InputError);
}

// One launch configuration can do different work: on the H100, BERT-base's backward launched a GEMM of the
// forward's grid and block over a 4x longer reduction (46 vs 171 us, 4x the DRAM reads; the first of the long
// ones fifth of its configuration). Each work variant of real weight gets a replayed launch of its own (ncu's
// --launch-count raised to reach it) and its later launches take its counters; a variant ncu cannot reach
// within kMaxLaunchCount takes the nearest variant's counters and is counted, never silently.
TEST(DedupPlan, WorkVariantsOfOneLaunchConfigurationEachGetAReplayedLaunch) {
  Timeline tl;
  std::int64_t t = 0;
  auto launch = [&](const char* name, std::int64_t ns, Dim3 grid) {
    const std::size_t k = tl.kernels.add(ActivityKind::kKernel, tl.strings.intern(name), 0, 7, t, t + ns);
    tl.kernels.pid[k] = 1;
    tl.kernels.grid[k] = grid;
    tl.kernels.block[k] = {128, 1, 1};
    tl.kernels.correlation[k] = k + 1;
    t += ns + 1000;
    return static_cast<std::uint32_t>(k);
  };
  std::vector<std::uint32_t> short_gemm, long_gemm, rare;
  for (int i = 0; i < 4; ++i) short_gemm.push_back(launch("gemm", 45'500 + 300 * i, {8, 12, 1}));
  for (int i = 0; i < 12; ++i) {
    long_gemm.push_back(launch("gemm", 170'000 + 500 * (i % 3), {8, 12, 1}));
    short_gemm.push_back(launch("gemm", 46'000, {8, 12, 1}));
  }
  // Short kernels spread by a microsecond or two launch to launch: one work.
  std::vector<std::uint32_t> elementwise;
  for (int i = 0; i < 10; ++i) elementwise.push_back(launch("add", 3'000 + 700 * (i % 3), {64, 1, 1}));
  // A variant first launched eleventh: beyond kMaxLaunchCount.
  for (int i = 0; i < 10; ++i) rare.push_back(launch("reduce", 20'000, {4, 1, 1}));
  const std::uint32_t rare_long = launch("reduce", 400'000, {4, 1, 1});

  const DedupPlan p = plan_kernel_dedup(tl, 0);
  EXPECT_EQ(p.launch_count, 5);  // the first long GEMM is the configuration's fifth launch
  const std::vector<std::string> args = ncu_selection_args(p);
  ASSERT_GE(args.size(), 4u);
  EXPECT_EQ(args[2], "--launch-count");
  EXPECT_EQ(args[3], "5");
  for (std::size_t i = 0; i < short_gemm.size(); ++i)
    EXPECT_EQ(p.counters_from[short_gemm[i]], i < 4 ? kNoIndex : short_gemm[0]) << i;
  EXPECT_TRUE(p.replayed[long_gemm[0]]);
  for (std::size_t i = 1; i < long_gemm.size(); ++i) EXPECT_EQ(p.counters_from[long_gemm[i]], long_gemm[0]) << i;
  for (std::size_t i = 5; i < elementwise.size(); ++i) EXPECT_EQ(p.counters_from[elementwise[i]], elementwise[0]);
  EXPECT_EQ(p.counters_from[rare_long], rare[0]);
  EXPECT_TRUE(p.other_work[rare_long]);
  EXPECT_EQ(p.kernels_other_work, 1u);
  EXPECT_EQ(std::count(p.other_work.begin(), p.other_work.end(), 1), 1);
  EXPECT_EQ(p.kernels_replayed, 5u + 5u + 5u);
  const std::string notes = join(p.notes, "\n");
  EXPECT_NE(notes.find("2 launch configurations launch other work"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 kernels take the counters of a launch of their configuration that did other work"),
            std::string::npos)
      << notes;
  // The gemm's two variants are two classes; the reduce's lone long launch a class of its own, with its reason.
  std::size_t with_reason = 0;
  for (const DedupClass& c : p.classes)
    for (const DedupInstance& i : c.instances) with_reason += !i.reason.empty();
  EXPECT_EQ(with_reason, 1u);

  // A capture pass B ran with --launch-count 1 (an earlier version): the long GEMMs took the short one's
  // counters, and the plan says so.
  const DedupPlan one = plan_kernel_dedup(tl, 0, DedupSelection::kPerLaunchConfigMangled, 1);
  EXPECT_EQ(one.launch_count, 1);
  for (std::uint32_t k : long_gemm) {
    EXPECT_EQ(one.counters_from[k], short_gemm[0]);
    EXPECT_TRUE(one.other_work[k]);
  }
  EXPECT_EQ(one.kernels_other_work, long_gemm.size() + 1);
  // verify 1 with the plan's count: the second launch of each configuration is compared with its variant's
  // replayed launch.
  const DedupPlan v = plan_kernel_dedup(tl, 1);
  EXPECT_EQ(v.launch_count, 5);
  EXPECT_EQ(v.verify_against[short_gemm[1]], short_gemm[0]);
}

TEST(DedupPlan, CompiledLayersPropagateWithinTheirClassWhereNcuReplayedTheRepresentative) {
  TempDir dir;
  const std::string structure = write_file(dir, "s.json", gpt2_structure_json("fx_graph"));
  const std::string trace = fixture("gpt2_compiled/trace.json.gz"), csv = fixture("gpt2_compiled/ncu.csv.gz"),
                    inductor = fixture("gpt2_compiled/inductor");
  const DedupRequest request{DedupMode::kLayers, dedup_selection(DedupMode::kLayers, "fx_graph", false, "nvtx_modules"), 0,
                             structure};
  EXPECT_EQ(request.selection, DedupSelection::kPerLaunchConfigMangled);
  const AttributeResult full = attribute(trace, csv, inductor);
  const DedupPlan plan = build_dedup_plan(full.capture.timeline, full.attribution, request);
  const DedupPlan by_kernel = plan_kernel_dedup(full.capture.timeline, 0);
  EXPECT_EQ(plan.replayed, by_kernel.replayed);  // what ncu's filter replays
  ASSERT_EQ(plan.classes.size(), 1u);
  EXPECT_EQ(plan.classes[0].instances.size(), 12u);
  for (std::size_t k = 0; k < plan.counters_from.size(); ++k)
    if (plan.counters_from[k] != kNoIndex) {
      EXPECT_TRUE(plan.replayed[plan.counters_from[k]]);
      EXPECT_EQ(launch_config(full.capture.timeline, static_cast<std::uint32_t>(k)),
                launch_config(full.capture.timeline, plan.counters_from[k]));
    }
  const AttributeResult d = attribute(trace, deduplicated_csv(full, plan, csv, dir), inductor, request);
  std::string where;
  const double worst = worst_operator_deviation(full, d, 0.0, &where);
  std::printf("compiled GPT-2: %llu of %llu kernels replayed (%.1fx fewer); worst operator key-metric deviation %.2f "
              "%% (%s)\n",
              static_cast<unsigned long long>(plan.kernels_replayed), static_cast<unsigned long long>(plan.kernels),
              double(plan.kernels) / double(plan.kernels_replayed), 100 * worst, where.c_str());
  EXPECT_LE(worst, 0.05) << where;
}

TEST(DedupPlan, StructureFilesOfAnotherFormatOrVersionAreRefused) {
  EXPECT_THROW(parse_structure(R"({"format": "x", "version": 1, "classes": []})", "s.json"), InputError);
  EXPECT_THROW(parse_structure(R"({"format": "opprof-structure", "version": 2, "classes": []})", "s.json"), InputError);
  EXPECT_THROW(parse_structure(R"({"format": "opprof-structure", "version": 1})", "s.json"), InputError);
  const ModelStructure s = parse_structure(gpt2_structure_json("eager_inputs"), "s.json");
  EXPECT_EQ(s.runtime, "eager_inputs");
  ASSERT_EQ(s.classes.size(), 1u);
  EXPECT_EQ(s.classes[0].instances.back(), "transformer.h.11");
}

TEST(DedupPlan, NvtxSelectionNamesTheRangeAndThePlanFileTheSkippedModules) {
  DedupPlan p;
  p.mode = DedupMode::kLayers;
  p.selection = DedupSelection::kNvtxModules;
  EXPECT_TRUE(ncu_selection_args(p).empty());  // nothing to skip: no filter
  p.skip_modules = {"h.1", "h.2"};
  EXPECT_EQ(ncu_selection_args(p), (std::vector<std::string>{"--nvtx", "--nvtx-exclude", "opprof.dup/"}));
  EXPECT_EQ(dedup_plan_json(p, true),
            "{\"format\": \"opprof-dedup-plan\", \"version\": 1, \"mechanism\": \"nvtx_modules\", \"range\": "
            "\"opprof.dup\", \"backward\": true, \"skip_modules\": [\"h.1\", \"h.2\"]}\n");
  // The default: the per-launch-config filter keyed by the mangled name, in every capture kind.
  for (const char* runtime : {"eager_inputs", "fx_graph"})
    for (const bool backward : {false, true}) {
      EXPECT_EQ(dedup_selection(DedupMode::kLayers, runtime, backward), DedupSelection::kPerLaunchConfigMangled);
      EXPECT_EQ(dedup_selection(DedupMode::kLayers, runtime, backward, "per_launch_config"),
                DedupSelection::kPerLaunchConfig);
    }
  // Module hooks only where they run per layer around every kernel: eager inference.
  EXPECT_EQ(dedup_selection(DedupMode::kLayers, "eager_inputs", false, "nvtx_modules"), DedupSelection::kNvtxModules);
  EXPECT_EQ(dedup_selection(DedupMode::kLayers, "fx_graph", false, "nvtx_modules"),
            DedupSelection::kPerLaunchConfigMangled);
  EXPECT_EQ(dedup_selection(DedupMode::kKernels, "eager_inputs", false, "nvtx_modules"),
            DedupSelection::kPerLaunchConfigMangled);
  // A training step: backward kernels escape the forward hooks' NVTX ranges.
  EXPECT_EQ(dedup_selection(DedupMode::kLayers, "eager_inputs", true, "nvtx_modules"),
            DedupSelection::kPerLaunchConfigMangled);
}

}  // namespace
}  // namespace opprof

namespace opprof {
namespace {

// Golden, from the H200 (tests/fixtures/dedup/README.md): each deduplicated capture's ncu rows are exactly
// its plan's replay set, every propagated value is marked with its source and equals it, and the operators'
// key metrics agree with the capture without dedup of the same session.
struct DedupCapture {
  const char* folder;  // under tests/fixtures/dedup
  DedupSelection selection;
  int verify;
  std::uint64_t rows;
  const char* off;          // the same session's capture without dedup; nullptr: none was made
  double all_ops_share;     // every operator with at least this share of the kernel time is within 5 % (1: none)
  std::size_t classes = 1, instances = 12;  // the structural classes and their instances (GPT-2: 12 blocks)
  const char* gpu = "H200";                 // where it was captured
};

// The done-when figure of --dedup-verify: every metric's time-weighted median deviation within 5 %, but for
// DRAM bytes written: 0 for half the kernels of the H200's full capture and under 3 KB for nine in ten (their
// outputs stay in the 50 MB L2), so one side's few bytes against the other's none count as 100 %
// (docs/dedup.md). Deviations: the pipeline's MetricDeviation or the profile reader's.
template <class Deviations>
void expect_verify_medians_within_5_percent(const Deviations& deviations) {
  for (const auto& v : deviations) {
    if (v.metric.starts_with("dram__bytes_write")) continue;
    EXPECT_LE(v.median_rel, 0.05) << v.metric;
  }
}

class GoldenDedup : public ::testing::TestWithParam<DedupCapture> {};

TEST_P(GoldenDedup, PropagatedValuesAreMarkedAndEqualTheirRepresentatives) {
  const DedupCapture c = GetParam();
  const std::string dir = fixture(std::string("dedup/") + c.folder);
  TempDir tmp;
  AttributeRequest r;
  r.trace = dir + "/trace.opprof";
  r.ncu = dir + "/ncu.csv.gz";
  r.dedup = {DedupMode::kLayers, c.selection, c.verify, dir + "/opprof_structure.json"};
  r.output = tmp.file("p.db");
  const AttributeResult d = attribute_capture(r);
  ASSERT_TRUE(d.dedup);
  EXPECT_EQ(d.ncu->rows(), c.rows);
  EXPECT_EQ(d.dedup->kernels_replayed, c.rows);
  EXPECT_EQ(d.match->matched, c.rows);
  EXPECT_TRUE(d.match->unmatched_rows.empty());
  EXPECT_TRUE(d.match->unmatched_kernels.empty());
  EXPECT_EQ(d.propagation.without_source, 0u);
  EXPECT_EQ(d.propagation.propagated + d.dedup->kernels_replayed, d.dedup->kernels);
  // The plan of the capture's own timeline asks for the launch count pass B ran (no fit to the rows needed).
  EXPECT_EQ(build_dedup_plan(d.capture.timeline, d.attribution, r.dedup).launch_count, d.dedup->launch_count);
  ASSERT_EQ(d.dedup->classes.size(), c.classes);
  std::size_t instances = 0;
  for (const DedupClass& cls : d.dedup->classes) instances += cls.instances.size();
  EXPECT_EQ(instances, c.instances);

  const KernelMetrics& km = d.kernel_metrics;
  std::size_t marked = 0;
  for (std::size_t k = 0; k < km.kernels; ++k) {
    const std::uint32_t from = km.counters_from[k];
    if (from == kNoIndex) continue;
    ++marked;
    EXPECT_EQ(km.counters_from[from], kNoIndex);  // the source was replayed itself
    for (std::size_t m = 0; m < km.metrics.size(); ++m) {
      const double a = km.value(k, m), b = km.value(from, m);
      EXPECT_TRUE((std::isnan(a) && std::isnan(b)) || a == b) << k << " " << km.metrics[m].name;
    }
  }
  EXPECT_EQ(marked, d.propagation.propagated);

  const ProfileDedup pd = ProfileReader(r.output).dedup();
  EXPECT_EQ(pd.kernels_propagated, marked);
  EXPECT_EQ(pd.selection, to_string(c.selection));
  if (c.verify > 0) {
    ASSERT_FALSE(pd.verify_deviation.empty());
    expect_verify_medians_within_5_percent(pd.verify_deviation);  // measured 0.0-1.4 %
  }

  // Against the same session's capture without dedup (another run: compared by operator).
  if (c.off == nullptr) return;
  const std::string off = fixture(std::string("dedup/") + c.off);
  const AttributeResult full = attribute(off + "/trace.opprof", off + "/ncu.csv.gz");
  std::string where, where_all;
  const double main_ops = worst_operator_deviation(full, d, 0.05, &where, /*same_timeline=*/false);
  const double all_ops = worst_operator_deviation(full, d, c.all_ops_share, &where_all, /*same_timeline=*/false);
  std::printf("%s %s: %llu of %llu kernels replayed; operators with >= 5 %% of the time within %.2f %% of the "
              "capture without dedup (%s); with >= %.1f %% within %.2f %% (%s)\n",
              c.gpu, c.folder, static_cast<unsigned long long>(c.rows), static_cast<unsigned long long>(d.dedup->kernels),
              100 * main_ops, where.c_str(), 100 * c.all_ops_share, 100 * all_ops, where_all.c_str());
  EXPECT_LE(main_ops, 0.05) << where;
  EXPECT_LE(all_ops, 0.05) << where_all;
}

// --dedup-verify 3 with the default key, on the H200 capture without dedup (every kernel replayed): pass B
// would have replayed each launch configuration's first four launches, the representative and three
// duplicates. Simulated by dropping the other rows from the full CSV; the values are the H200's own.
// A capture whose pass B ran another --launch-count than the plan would choose (an earlier opprof ran 1 + verify;
// a user may pass their own): the rows say which, and the plan of that count is the one matched.
TEST(GoldenDedupVerify, ACaptureOfAnotherLaunchCountIsPlannedWithTheCountItsRowsSay) {
  TempDir dir;
  const std::string off = fixture("dedup/gpt2_eager/mangled_off");
  const AttributeResult full = attribute(off + "/trace.opprof", off + "/ncu.csv.gz");
  for (DedupSelection key : {DedupSelection::kPerLaunchConfigMangled, DedupSelection::kPerLaunchConfig}) {
    DedupRequest request{DedupMode::kKernels, key, 0, ""};
    const int natural = build_dedup_plan(full.capture.timeline, full.attribution, request).launch_count;
    request.launch_count = natural == 1 ? 3 : 1;
    const DedupPlan ran = build_dedup_plan(full.capture.timeline, full.attribution, request);
    ASSERT_EQ(ran.launch_count, request.launch_count);
    request.launch_count = 0;  // what attribute knows of a capture that did not record it
    const AttributeResult d =
        attribute(off + "/trace.opprof", deduplicated_csv(full, ran, off + "/ncu.csv.gz", dir), "", request);
    ASSERT_TRUE(d.dedup);
    EXPECT_EQ(d.dedup->launch_count, ran.launch_count) << to_string(key);
    EXPECT_EQ(d.dedup->kernels_replayed, ran.kernels_replayed);
    EXPECT_EQ(d.match->matched, ran.kernels_replayed);
    EXPECT_TRUE(d.match->unmatched_rows.empty());
    EXPECT_EQ(d.propagation.without_source, 0u);
  }
}

// BERT-base's training step launches one cuBLAS GEMM configuration for two works (45 us forward and backward,
// 170 us in backward, first at the configuration's fifth launch). Simulated on the H100 capture without dedup:
// with one replayed launch per configuration (what opprof ran before it told work variants apart) the 170 us
// launches take the 45 us launch's counters and aten::addmm's DRAM bytes come out about 22 % low; the plan's own
// launch count reaches each variant and keeps every operator of >= 5 % of the time within 5 %.
TEST(GoldenDedupVerify, BertsWorkVariantsOfOneGemmConfigurationEachGetAReplayedLaunch) {
  TempDir dir;
  const std::string off = fixture("dedup/bert_train/off");
  const AttributeResult full = attribute(off + "/trace.opprof", off + "/ncu.csv.gz");
  DedupRequest request{DedupMode::kLayers, DedupSelection::kPerLaunchConfigMangled, 0,
                       fixture("dedup/bert_train/layers") + "/opprof_structure.json"};
  const DedupPlan plan = build_dedup_plan(full.capture.timeline, full.attribution, request);
  EXPECT_EQ(plan.launch_count, 5);
  EXPECT_EQ(plan.kernels_replayed, 200u);  // the H100 run's ncu rows
  EXPECT_EQ(plan.kernels_other_work, 0u);
  const AttributeResult d =
      attribute(off + "/trace.opprof", deduplicated_csv(full, plan, off + "/ncu.csv.gz", dir), "", request);
  std::string where;
  const double main_ops = worst_operator_deviation(full, d, 0.05, &where);
  std::printf("H100 BERT training step, launch count %d: %llu of %llu kernels replayed, operators >= 5 %% within "
              "%.2f %% (%s)\n",
              plan.launch_count, static_cast<unsigned long long>(plan.kernels_replayed),
              static_cast<unsigned long long>(plan.kernels), 100 * main_ops, where.c_str());
  EXPECT_LE(main_ops, 0.05) << where;

  request.launch_count = 1;
  const DedupPlan one = build_dedup_plan(full.capture.timeline, full.attribution, request);
  EXPECT_GT(one.kernels_other_work, 10u);  // the twelve backward 170 us GEMMs at least
  TempDir dir1;
  const AttributeResult d1 =
      attribute(off + "/trace.opprof", deduplicated_csv(full, one, off + "/ncu.csv.gz", dir1), "", request);
  const double main_ops1 = worst_operator_deviation(full, d1, 0.05, &where);
  std::printf("H100 BERT training step, launch count 1: %llu kernels replayed, %llu of other work, operators >= 5 %% "
              "within %.2f %% (%s)\n",
              static_cast<unsigned long long>(one.kernels_replayed),
              static_cast<unsigned long long>(one.kernels_other_work), 100 * main_ops1, where.c_str());
  EXPECT_GT(main_ops1, 0.15) << where;
  EXPECT_NE(where.find("aten::addmm"), std::string::npos);
}

TEST(GoldenDedupVerify, VerifyThreeWithTheMangledKeyOnTheFullH200Capture) {
  TempDir dir;
  const std::string off = fixture("dedup/gpt2_eager/mangled_off");
  const DedupRequest request{DedupMode::kLayers, DedupSelection::kPerLaunchConfigMangled, 3,
                             fixture("dedup/gpt2_eager/mangled") + "/opprof_structure.json"};
  const AttributeResult full = attribute(off + "/trace.opprof", off + "/ncu.csv.gz");
  const DedupPlan plan = build_dedup_plan(full.capture.timeline, full.attribution, request);
  const AttributeResult d =
      attribute(off + "/trace.opprof", deduplicated_csv(full, plan, off + "/ncu.csv.gz", dir), "", request);
  ASSERT_TRUE(d.dedup);
  EXPECT_EQ(d.match->matched, plan.kernels_replayed);
  EXPECT_TRUE(d.match->unmatched_rows.empty());
  ASSERT_FALSE(d.dedup_deviation.empty());
  std::size_t pairs = 0;
  for (const MetricDeviation& m : d.dedup_deviation) {
    pairs = std::max(pairs, m.pairs);
    std::printf("  %-60s pairs %3zu  median %6.2f %%  max %7.2f %%\n", m.metric.c_str(), m.pairs, 100 * m.median_rel,
                100 * m.max_rel);
  }
  expect_verify_medians_within_5_percent(d.dedup_deviation);
  std::printf("H200 eager GPT-2, --dedup-verify 3 (default key): %llu of %llu kernels replayed, %zu verify pairs\n",
              static_cast<unsigned long long>(plan.kernels_replayed), static_cast<unsigned long long>(plan.kernels),
              pairs);
  EXPECT_GT(pairs, 30u);
}

INSTANTIATE_TEST_SUITE_P(Captured, GoldenDedup,
                         ::testing::Values(DedupCapture{"gpt2_eager/nvtx", DedupSelection::kNvtxModules, 0, 32,
                                                        "gpt2_eager/off", 1.0},
                                           DedupCapture{"gpt2_eager/launch_config_verify3",
                                                        DedupSelection::kPerLaunchConfig, 3, 46, "gpt2_eager/off", 1.0},
                                           DedupCapture{"gpt2_eager/mangled", DedupSelection::kPerLaunchConfigMangled,
                                                        0, 27, "gpt2_eager/mangled_off", 0.002},
                                           DedupCapture{"gpt2_eager/mangled_verify3",
                                                        DedupSelection::kPerLaunchConfigMangled, 3, 66, nullptr, 1.0},
                                           DedupCapture{"gpt2_train/mangled", DedupSelection::kPerLaunchConfigMangled,
                                                        0, 82, nullptr, 1.0},
                                           DedupCapture{"bert_train/layers", DedupSelection::kPerLaunchConfigMangled,
                                                        0, 200, "bert_train/off", 0.001, 2, 14, "H100"},
                                           // Compiled, two steps in the window: the second step's kernels take the
                                           // first's counters. Not every operator is held to 5 %: the GELU kernel
                                           // (1.4 % of the time) spreads 28 % in occupancy from replay to replay.
                                           DedupCapture{"gpt2_compiled_i2/layers",
                                                        DedupSelection::kPerLaunchConfigMangled, 0, 17,
                                                        "gpt2_compiled_i2/off", 1.0, 1, 12, "H100"}),
                         [](const ::testing::TestParamInfo<DedupCapture>& p) {
                           std::string name = p.param.folder;
                           std::replace(name.begin(), name.end(), '/', '_');
                           return name;
                         });

}  // namespace
}  // namespace opprof
