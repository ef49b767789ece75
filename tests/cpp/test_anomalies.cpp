// Anomalies as data: every choice the engine makes on its own, triggered by a small constructed input,
// counted by the engine, written to the profile's anomalies table and shown by both reports.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sqlite3.h>

#include <string>

#include "opprof/anomaly/anomalies.hpp"
#include "opprof/attribute/engine.hpp"
#include "opprof/match/ncu_match.hpp"
#include "opprof/metrics/aggregate.hpp"
#include "opprof/report/json.hpp"
#include "opprof/report/terminal.hpp"
#include "opprof/store/profile_db.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"
#include "profile_fixture.hpp"

using namespace opprof;
using namespace opprof::testing;

namespace {

constexpr std::uint32_t kPid = 100;
constexpr std::uint64_t kTid = 7;

// A timeline of one thread: ranges and kernels launched at a CPU time.
struct Builder {
  Timeline tl;
  std::uint64_t next_corr = 1;

  void range(RangeKind kind, std::string_view text, std::int64_t s, std::int64_t e) {
    tl.ranges.add(kind, RangeScope::kThread, tl.strings.intern(text), tl.strings.intern("cpu_op"), kPid, kTid, s, e);
  }
  std::size_t kernel(std::string_view name, std::int64_t t, Dim3 grid = {1, 1, 1}) {
    const std::uint64_t corr = next_corr++;
    const std::int64_t gpu = 100000 + t * 10;
    auto i = tl.kernels.add(ActivityKind::kKernel, tl.strings.intern(name), 0, 7, gpu, gpu + 5);
    tl.kernels.correlation[i] = corr;
    tl.kernels.pid[i] = kPid;
    tl.kernels.grid[i] = grid;
    tl.kernels.block[i] = {128, 1, 1};
    tl.launches.add(tl.strings.intern("cudaLaunchKernel"), kPid, kTid, t, t + 5, corr);
    return i;
  }
};

WrapperCall triton_call(std::string callee, std::string node) {
  return {WrapperCall::Kind::kTriton, std::move(callee), "", {std::move(node)}, {"aten.add"}, 1};
}

// One compiled region without a graph hash, around two generated kernels' launches.
Builder compiled_region_with_two_kernels() {
  Builder b;
  b.range(RangeKind::kCompiledRegion, "Torch-Compiled Region: 0/0", 0, 9000);
  b.range(RangeKind::kOperator, "triton_poi_fused_add_0", 100, 200);
  b.range(RangeKind::kOperator, "triton_poi_fused_mul_1", 300, 400);
  b.kernel("triton_poi_fused_add_0", 110);
  b.kernel("triton_poi_fused_mul_1", 310);
  return b;
}

InductorGraph graph_of_two_kernels(std::string dir) {
  InductorGraph g;
  g.dir = std::move(dir);
  g.calls.push_back(triton_call("triton_poi_fused_add_0", "add"));
  g.calls.push_back(triton_call("triton_poi_fused_mul_1", "mul"));
  return g;
}

NcuTable ncu_like(const Timeline& tl, std::size_t extra_rows = 0) {
  NcuTable t;
  t.path = "replay.ncu.csv";
  auto row = [&](std::string name, Dim3 grid, Dim3 block) {
    t.id.push_back(t.id.size());
    t.pid.push_back(859);
    t.kernel_name.push_back(std::move(name));
    t.context.push_back(1);
    t.stream.push_back(7);
    t.device.push_back(0);
    t.grid.push_back(grid);
    t.block.push_back(block);
    t.line.push_back(t.line.size() + 3);
  };
  for (std::size_t k = 0; k < tl.kernels.size(); ++k)
    row(std::string(tl.str(tl.kernels.name[k])), tl.kernels.grid[k], tl.kernels.block[k]);
  for (std::size_t i = 0; i < extra_rows; ++i) row("replay_only_kernel_" + std::to_string(i), {1, 1, 1}, {32, 1, 1});
  return t;
}

// Writes what the engine concluded to a profile, as the attribute pipeline does, and opens it.
class AnomalyProfile : public ::testing::Test {
 protected:
  ProfileReader write(const Timeline& tl, const AttributionTable& a, const Anomalies& anomalies,
                      const NcuMatch* match = nullptr, std::size_t ncu_rows = 0) {
    KernelMetrics km;
    km.kernels = tl.kernels.size();
    Aggregates agg = aggregate(tl, a, km);
    Coverage cov = compute_coverage(tl, a, match, ncu_rows);
    ProfileInputs in;
    in.timeline = &tl;
    in.attribution = &a;
    in.aggregates = &agg;
    in.coverage = &cov;
    in.anomalies = &anomalies;
    const std::string path = dir.file("profile.db");
    write_profile_db(path, in);
    return ProfileReader(path);
  }

  // The anomaly's row as the database holds it, its entry in report --json, and its line in the
  // terminal report all say the same count; returns the details the database holds.
  std::string expect_reported(const ProfileReader& profile, AnomalyKind kind, std::uint64_t count) {
    const std::string name = to_string(kind);
    std::string details;
    bool found = false;
    for (const ProfileAnomaly& a : profile.anomalies()) {
      if (a.kind != name) continue;
      found = true;
      EXPECT_EQ(a.count, count) << name;
      details = join(a.details, "\n");
    }
    EXPECT_TRUE(found) << name << " not in the anomalies table";

    const std::string json = render_json_report(profile);
    simdjson::dom::element doc = parser.parse(json);
    simdjson::dom::object entry;
    EXPECT_EQ(doc["anomalies"][name].get_object().get(entry), simdjson::SUCCESS) << json;
    EXPECT_EQ(entry["count"].get_uint64().value(), count);
    EXPECT_GE(entry["detail"].get_array().size(), 1u);

    const std::string terminal = render_terminal_report(profile);
    EXPECT_NE(terminal.find(name + " x" + std::to_string(count)), std::string::npos) << terminal;
    return details;
  }

  TempDir dir;
  simdjson::dom::parser parser;
};

}  // namespace

TEST(Anomalies, CountEveryOccurrenceAndKeepTheFirstDetails) {
  Anomalies a;
  EXPECT_TRUE(a.empty());
  for (int i = 0; i < 20; ++i) a.record(AnomalyKind::kFusionGraphTie, "tie " + std::to_string(i));
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a.count(AnomalyKind::kFusionGraphTie), 20u);
  EXPECT_EQ(a.count(AnomalyKind::kAlignGreedyFallback), 0u);
  ASSERT_EQ(a[AnomalyKind::kFusionGraphTie].details.size(), Anomalies::kMaxDetails);
  EXPECT_EQ(a[AnomalyKind::kFusionGraphTie].details.front(), "tie 0");
  for (std::size_t k = 0; k < kAnomalyKindNames.size(); ++k)
    EXPECT_EQ(parse_anomaly_kind(kAnomalyKindNames[k]), static_cast<AnomalyKind>(k));
  EXPECT_FALSE(parse_anomaly_kind("no.such_kind"));
}

TEST_F(AnomalyProfile, GraphTieBetweenCandidateGraphs) {
  Builder b = compiled_region_with_two_kernels();
  InductorArtifacts ind;
  ind.graphs.push_back(graph_of_two_kernels("graphs/first"));
  ind.graphs.push_back(graph_of_two_kernels("graphs/second"));
  AttributionNotes notes;
  AttributionTable a = attribute_timeline(b.tl, &ind, AttributionOptions{}, &notes);
  EXPECT_EQ(a.path[0], AttributionPath::kFusion);  // the first graph still wins
  EXPECT_EQ(notes.anomalies.count(AnomalyKind::kFusionGraphTie), 1u);
  std::string details = expect_reported(write(b.tl, a, notes.anomalies), AnomalyKind::kFusionGraphTie, 1);
  EXPECT_NE(details.find("graphs/first"), std::string::npos) << details;
  EXPECT_NE(details.find("graphs/second"), std::string::npos) << details;
}

TEST_F(AnomalyProfile, NoTieWhenOneGraphSharesMoreNames) {
  Builder b = compiled_region_with_two_kernels();
  InductorArtifacts ind;
  ind.graphs.push_back(graph_of_two_kernels("graphs/first"));
  InductorGraph partial;
  partial.dir = "graphs/partial";
  partial.calls.push_back(triton_call("triton_poi_fused_mul_1", "mul"));
  ind.graphs.push_back(partial);
  AttributionNotes notes;
  attribute_timeline(b.tl, &ind, AttributionOptions{}, &notes);
  EXPECT_TRUE(notes.anomalies.empty());
}

TEST_F(AnomalyProfile, ModuleMapTieBetweenMapsOfOtherCompileIds) {
  Builder b = compiled_region_with_two_kernels();
  InductorArtifacts ind;
  ind.graphs.push_back(graph_of_two_kernels("graphs/only"));
  for (const char* id : {"1/0", "2/0"}) {
    FxModuleMap map;
    map.compile_id = id;
    map.nodes["add"] = {"block.0", "Block", "model.py:10"};
    ind.module_maps.push_back(map);
  }
  AttributionNotes notes;
  AttributionTable a = attribute_timeline(b.tl, &ind, AttributionOptions{}, &notes);
  EXPECT_EQ(b.tl.str(a.module[0]), "block.0");
  EXPECT_EQ(notes.anomalies.count(AnomalyKind::kFusionModuleMapTie), 1u);
  std::string details = expect_reported(write(b.tl, a, notes.anomalies), AnomalyKind::kFusionModuleMapTie, 1);
  EXPECT_NE(details.find("1/0 and 2/0"), std::string::npos) << details;
}

TEST_F(AnomalyProfile, AlignmentPastItsStepLimitFallsBackToGreedyMatching) {
  // Launches add, mul, other against calls add, sub, mul: the middle needs the search, not just the
  // common prefix and suffix.
  Builder b = compiled_region_with_two_kernels();
  b.range(RangeKind::kOperator, "triton_poi_fused_other_9", 500, 600);
  b.kernel("triton_poi_fused_other_9", 510);
  InductorArtifacts ind;
  InductorGraph g = graph_of_two_kernels("graphs/only");
  g.calls.insert(g.calls.begin() + 1, triton_call("triton_poi_fused_sub_2", "sub"));  // a call that did not run
  ind.graphs.push_back(g);
  AttributionOptions options;
  options.fusion_align_max_steps = 1;
  AttributionNotes notes;
  AttributionTable a = attribute_timeline(b.tl, &ind, options, &notes);
  EXPECT_EQ(a.path[0], AttributionPath::kFusion);  // greedy matching still pairs the names
  EXPECT_EQ(a.path[1], AttributionPath::kFusion);
  EXPECT_EQ(notes.anomalies.count(AnomalyKind::kAlignGreedyFallback), 1u);
  std::string details = expect_reported(write(b.tl, a, notes.anomalies), AnomalyKind::kAlignGreedyFallback, 1);
  EXPECT_NE(details.find("3 against 3 elements"), std::string::npos) << details;

  // Within the limit the same input aligns exactly and records nothing.
  AttributionNotes exact;
  attribute_timeline(b.tl, &ind, AttributionOptions{}, &exact);
  EXPECT_TRUE(exact.anomalies.empty());
}

TEST_F(AnomalyProfile, NcuIdentitiesWithoutAGridCompareNamesAlone) {
  Builder b;
  b.range(RangeKind::kOperator, "aten::add", 0, 1000);
  b.kernel("add_kernel", 10);
  b.kernel("mul_kernel", 20, Dim3{});  // the source recorded no grid for this one
  AttributionTable a = attribute_timeline(b.tl, nullptr, AttributionOptions{});
  NcuTable ncu = ncu_like(b.tl);
  Anomalies anomalies;
  NcuMatch m = match_ncu(b.tl, ncu, {}, &anomalies);
  EXPECT_EQ(m.matched, 2u);
  EXPECT_EQ(anomalies.count(AnomalyKind::kNcuMatchByNameOnly), 1u);
  std::string details =
      expect_reported(write(b.tl, a, anomalies, &m, ncu.rows()), AnomalyKind::kNcuMatchByNameOnly, 1);
  EXPECT_NE(details.find("1 of 2 timeline kernels and 1 of 2 ncu rows"), std::string::npos) << details;

  Anomalies none;
  b.tl.kernels.grid[1] = {1, 1, 1};
  match_ncu(b.tl, ncu_like(b.tl), {}, &none);
  EXPECT_TRUE(none.empty());
}

TEST_F(AnomalyProfile, NcuSequencesTooFarApartArePairedByOccurrence) {
  Builder b;
  b.range(RangeKind::kOperator, "aten::add", 0, 1000);
  b.kernel("add_kernel", 10);
  b.kernel("mul_kernel", 20);
  // More replay-only rows than the alignment's edit-distance limit.
  NcuTable ncu = ncu_like(b.tl, AlignmentLimits{}.max_edit_distance + 1);
  AttributionTable a = attribute_timeline(b.tl, nullptr, AttributionOptions{});
  Anomalies anomalies;
  NcuMatch m = match_ncu(b.tl, ncu, {}, &anomalies);
  EXPECT_EQ(m.matched, 2u);
  EXPECT_EQ(anomalies.count(AnomalyKind::kNcuPairedByOccurrence), 1u);
  std::string details =
      expect_reported(write(b.tl, a, anomalies, &m, ncu.rows()), AnomalyKind::kNcuPairedByOccurrence, 1);
  EXPECT_NE(details.find("(2 kernels)"), std::string::npos) << details;
}

TEST_F(AnomalyProfile, AProfileWithoutAnomaliesReportsNone) {
  Builder b;
  b.range(RangeKind::kOperator, "aten::add", 0, 1000);
  b.kernel("add_kernel", 10);
  AttributionNotes notes;
  AttributionTable a = attribute_timeline(b.tl, nullptr, AttributionOptions{}, &notes);
  ProfileReader profile = write(b.tl, a, notes.anomalies);
  EXPECT_TRUE(profile.anomalies().empty());
  simdjson::dom::element doc = parser.parse(render_json_report(profile));
  EXPECT_EQ(doc["anomalies"].get_object().size(), 0u);
  EXPECT_EQ(render_terminal_report(profile).find("Anomalies"), std::string::npos);
}

TEST_F(AnomalyProfile, AVersionOneProfileIsRefusedWithItsVersion) {
  Builder b = compiled_region_with_two_kernels();
  AttributionNotes notes;
  AttributionTable a = attribute_timeline(b.tl, nullptr, AttributionOptions{}, &notes);
  const std::string path = write(b.tl, a, notes.anomalies).path();
  {
    // What opprof wrote before the anomalies table, the metrics' weights and the FLOP columns existed.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "DROP TABLE anomalies; UPDATE meta SET value = '1' WHERE key = 'schema_version'; "
                           "PRAGMA user_version = 1;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  try {
    ProfileReader old(path);
    ADD_FAILURE() << "a version 1 profile was read";
  } catch (const opprof::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("profile has schema version 1"), std::string::npos) << e.what();
  }
}
