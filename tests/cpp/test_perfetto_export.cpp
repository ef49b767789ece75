// `opprof export --perfetto`: the trace read back with simdjson against the test profile — every GPU
// activity on its stream with its attribution, launches and ranges on their threads, one flow per launched
// kernel, counter tracks from ncu's percentages — and the file written atomically.
// tests/python/test_perfetto_export.py checks a fixture's trace against the trace-event format.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "opprof/export/perfetto.hpp"
#include "opprof/store/profile_db.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/atomic_file.hpp"
#include "opprof/util/error.hpp"
#include "profile_fixture.hpp"

using namespace opprof;
using namespace opprof::testing;

namespace {

// Trace timestamps (microseconds with nanosecond digits) back to nanoseconds.
std::int64_t ns(simdjson::dom::element e) { return std::llround(e.get_double().value() * 1000.0); }

class PerfettoExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    build_test_profile(p);
    std::string db = dir.file("profile.db");
    write_profile_db(db, p.inputs(true));
    reader = std::make_unique<ProfileReader>(db);
    trace_path = dir.file("trace.json");
    stats = export_perfetto(*reader, trace_path);
    text = slurp(trace_path);
    ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS) << text;
    for (simdjson::dom::element e : doc["traceEvents"].get_array()) events.push_back(e);
  }
  std::vector<simdjson::dom::element> of_phase(char ph) const {
    std::vector<simdjson::dom::element> out;
    for (simdjson::dom::element e : events)
      if (e["ph"].get_string().value() == std::string_view(&ph, 1)) out.push_back(e);
    return out;
  }
  TestProfile p;
  TempDir dir;
  std::unique_ptr<ProfileReader> reader;
  std::string trace_path, text;
  PerfettoExportStats stats;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::vector<simdjson::dom::element> events;
};

TEST_F(PerfettoExportTest, EveryGpuActivityOnItsStreamWithItsAttribution) {
  std::map<std::int64_t, simdjson::dom::element> by_kernel;
  for (simdjson::dom::element e : of_phase('X'))
    if (e["pid"].get_int64().value() == kPerfettoGpuPidBase + 0 && e["tid"].get_int64().value() == 7)
      by_kernel.emplace(e["args"]["kernel_id"].get_int64().value(), e);
  ASSERT_EQ(by_kernel.size(), reader->activity_count());  // none dropped, memcpy included
  EXPECT_EQ(stats.kernels, reader->activity_count());
  reader->for_each_kernel([&](const ProfileKernel& k) {
    simdjson::dom::element e = by_kernel.at(k.id);
    EXPECT_EQ(e["name"].get_string().value(), k.name);
    EXPECT_EQ(ns(e["ts"]), k.start_ns);
    EXPECT_EQ(ns(e["dur"]), k.end_ns - k.start_ns);
    std::string_view op;
    if (k.op.empty()) {
      EXPECT_NE(e["args"]["op"].error(), simdjson::SUCCESS) << "unknown text is left out";
    } else {
      EXPECT_EQ(e["args"]["op"].get(op), simdjson::SUCCESS);
    }
    EXPECT_EQ(op, k.op);
  });
  simdjson::dom::element k0 = by_kernel.at(0);
  EXPECT_EQ(k0["args"]["module"].get_string().value(), "h.0.mlp.c_fc");
  EXPECT_EQ(k0["args"]["phase"].get_string().value(), "forward");
  EXPECT_EQ(k0["cat"].get_string().value(), "kernel,forward");
  EXPECT_EQ(k0["args"]["grid"].get_string().value(), "128x2x1");
  EXPECT_EQ(by_kernel.at(1)["args"]["fused_ops"].get_string().value(), "aten::add, aten::gelu");
  EXPECT_EQ(by_kernel.at(4)["args"]["unattributed_reason"].get_string().value(), "no launch and no enclosing range");
}

TEST_F(PerfettoExportTest, LaunchesAndRangesOnTheirThreadsAndFlowsToTheirKernels) {
  std::vector<simdjson::dom::element> launches, thread_ranges, stream_ranges;
  for (simdjson::dom::element e : of_phase('X')) {
    std::string_view cat = e["cat"].get_string().value();
    if (cat == "launch") launches.push_back(e);
    else if (e["args"]["range_id"].error() == simdjson::SUCCESS)
      (e["pid"].get_int64().value() >= kPerfettoGpuPidBase ? stream_ranges : thread_ranges).push_back(e);
  }
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(stats.launches, 3u);
  for (simdjson::dom::element l : launches) {
    EXPECT_EQ(l["pid"].get_int64().value(), 4242);
    EXPECT_EQ(l["tid"].get_int64().value(), 77);
    EXPECT_EQ(l["name"].get_string().value(), "cudaLaunchKernel");
  }
  EXPECT_EQ(thread_ranges.size(), 3u);
  ASSERT_EQ(stream_ranges.size(), 1u);
  EXPECT_EQ(stream_ranges[0]["name"].get_string().value(), "aten::add");
  EXPECT_EQ(stream_ranges[0]["tid"].get_int64().value(), kPerfettoStreamRangeTidBase + 7);

  // k0, k2 and k6 have launches (correlation 11, 12, 13): one flow each, from the launch to the kernel.
  std::vector<simdjson::dom::element> starts = of_phase('s'), finishes = of_phase('f');
  ASSERT_EQ(starts.size(), 3u);
  ASSERT_EQ(finishes.size(), 3u);
  EXPECT_EQ(stats.flows, 3u);
  const std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> expected = {
      {0, {900, 1000}}, {2, {3900, 4000}}, {6, {7900, 8000}}};  // kernel id -> launch start, kernel start
  std::set<std::int64_t> ids;
  for (std::size_t i = 0; i < 3; ++i) {
    const std::int64_t id = starts[i]["id"].get_int64().value();
    ids.insert(id);
    ASSERT_TRUE(expected.count(id)) << id;
    EXPECT_EQ(ns(starts[i]["ts"]), expected.at(id).first);
    EXPECT_EQ(starts[i]["tid"].get_int64().value(), 77);
    EXPECT_EQ(finishes[i]["id"].get_int64().value(), id);
    EXPECT_EQ(ns(finishes[i]["ts"]), expected.at(id).second);
    EXPECT_EQ(finishes[i]["bp"].get_string().value(), "e");
    EXPECT_EQ(finishes[i]["pid"].get_int64().value(), kPerfettoGpuPidBase);
  }
  EXPECT_EQ(ids.size(), 3u);
}

TEST_F(PerfettoExportTest, CounterTracksFromNcuPercentagesAndNamedTracks) {
  // Three kernels with counters, four percentage metrics each, less the Triton kernel's missing tensor
  // value: 11 values, each from the kernel's start to its end.
  std::vector<simdjson::dom::element> counters = of_phase('C');
  EXPECT_EQ(counters.size(), 22u);
  EXPECT_EQ(stats.counter_events, 22u);
  std::map<std::string, int> per_track;
  for (simdjson::dom::element c : counters) {
    per_track[std::string(c["name"].get_string().value())] += 1;
    EXPECT_EQ(c["pid"].get_int64().value(), kPerfettoGpuPidBase);
  }
  EXPECT_EQ(per_track["dram__throughput.avg.pct_of_peak_sustained_elapsed [%]"], 6);
  bool dram_at_k1 = false;
  for (simdjson::dom::element c : counters)
    dram_at_k1 |= c["name"].get_string().value() == "dram__throughput.avg.pct_of_peak_sustained_elapsed [%]" &&
                  ns(c["ts"]) == 3000 && c["args"]["value"].get_double().value() == 85.0;
  EXPECT_TRUE(dram_at_k1);

  std::map<std::pair<std::int64_t, std::int64_t>, std::string> names;
  for (simdjson::dom::element m : of_phase('M'))
    names[{m["pid"].get_int64().value(), m["tid"].get_int64().value()}] +=
        std::string(m["name"].get_string().value()) + "=" + std::string(m["args"]["name"].get_string().value()) + ";";
  auto track = [&](std::int64_t pid, std::int64_t tid) { return names[std::pair{pid, tid}]; };
  EXPECT_EQ(track(kPerfettoGpuPidBase, 0), "process_name=GPU 0 (NVIDIA H200);");
  EXPECT_EQ(track(kPerfettoGpuPidBase, 7), "thread_name=stream 7;");
  EXPECT_EQ(track(kPerfettoGpuPidBase, kPerfettoStreamRangeTidBase + 7), "thread_name=stream 7 ranges;");
  EXPECT_EQ(track(4242, 77), "thread_name=thread 77;");
  EXPECT_EQ(doc["displayTimeUnit"].get_string().value(), "ns");
}

TEST_F(PerfettoExportTest, WrittenAtomically) {
  // Nothing but the trace and the database in the directory: the temporary file was renamed.
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"profile.db", "trace.json"}));
  // A directory that does not exist: an error, and nothing written.
  EXPECT_THROW(export_perfetto(*reader, dir.file("missing/trace.json")), OutputError);
  {
    AtomicFile out(trace_path);
    out.write("partial");
  }  // not committed: the old trace stays, the temporary is gone
  EXPECT_EQ(slurp(trace_path), text);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"profile.db", "trace.json"}));
}

}  // namespace
