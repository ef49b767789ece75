// attribute_capture as a library call: the progress it reports, the metadata it owns, the database it
// writes, a timeline read beforehand, and bad inputs named by file and line.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "opprof/pipeline/attribute.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/store/sqlite.hpp"
#include "opprof/util/error.hpp"
#include "profile_fixture.hpp"
#include "cli_harness.hpp"

using namespace opprof;

namespace {

using opprof::test::fixture;

AttributeRequest gpt2_compiled() {
  AttributeRequest r;
  r.trace = fixture("gpt2_compiled/trace.json.gz");
  r.ncu = fixture("gpt2_compiled/ncu.csv.gz");
  r.inductor = fixture("gpt2_compiled/inductor");
  return r;
}

// Records the index of each event's kind, trace bytes left out (how many depends on the reader's chunks).
class Recorder : public ProgressObserver {
 public:
  void on_attribute(const AttributeEvent& e) override {
    // Bytes come as often as the reader likes; the fixture predates some counters of today's set.
    if (std::holds_alternative<progress::MissingMetric>(e)) ++missing_metrics;
    else if (!std::holds_alternative<progress::TraceBytes>(e)) events.push_back(e);
  }
  std::size_t missing_metrics = 0;
  std::vector<AttributeEvent> events;
};

std::int64_t range_rows(const std::string& path) {
  sqlite::Database db(path, SQLITE_OPEN_READONLY);
  sqlite::Statement count(db, "SELECT COUNT(*) FROM ranges");
  return count.next() ? count.column_int(0) : -1;
}

}  // namespace

TEST(PipelineAttribute, ReportsEachStageAndWritesTheDatabase) {
  opprof::testing::TempDir tmp;
  AttributeRequest r = gpt2_compiled();
  r.output = tmp.file("p.db");
  Recorder rec;
  const AttributeResult result = attribute_capture(r, &rec);
  ASSERT_EQ(rec.events.size(), 6u);
  EXPECT_EQ(rec.missing_metrics, result.kernel_metrics.missing.size());
  const auto& read = std::get<progress::TraceRead>(rec.events[0]);
  EXPECT_EQ(read.kernels, 126u);
  EXPECT_EQ(read.format, TimelineFormat::kKinetoGzip);
  EXPECT_EQ(std::get<progress::InductorRead>(rec.events[1]).graphs, 1u);
  EXPECT_EQ(std::get<progress::NcuRead>(rec.events[2]).rows, 126u);
  EXPECT_EQ(std::get<progress::Attributed>(rec.events[3]).kernels, 126u);
  const auto& matched = std::get<progress::Matched>(rec.events[4]);
  EXPECT_EQ(matched.matched, 126u);
  EXPECT_EQ(matched.unmatched_rows, 0u);
  const auto& written = std::get<progress::Written>(rec.events[5]);
  EXPECT_EQ(written.path, r.output);
  EXPECT_DOUBLE_EQ(written.attributed_pct, result.coverage.pct(result.coverage.attributed_ns));

  // The writer owns the keys it knows; the pipeline adds the inputs and its own facts.
  for (const char* key : {"opprof_version", "created_at", "schema_version"}) EXPECT_EQ(result.metadata.count(key), 0u) << key;
  for (const auto& [key, value] : result.metadata) EXPECT_NE(key.rfind("timeline.", 0), 0u) << key;
  const ProfileReader db(r.output);
  EXPECT_EQ(db.meta("opprof_version"), OPPROF_VERSION);
  EXPECT_EQ(db.meta("chip"), "gh100");
  EXPECT_EQ(db.meta("inputs.ncu"), std::filesystem::absolute(r.ncu).string());
  EXPECT_EQ(db.meta("timeline.device.0.name"), result.timeline().metadata.at("device.0.name"));
}

TEST(PipelineAttribute, ATimelineReadBeforehandAttributesAlike) {
  const AttributeRequest r = gpt2_compiled();
  const AttributeResult direct = attribute_capture(r);
  Recorder rec;
  const AttributeResult reread = attribute_capture(read_capture_timeline(r.trace), r, &rec);
  EXPECT_EQ(reread.coverage.kernels, direct.coverage.kernels);
  EXPECT_EQ(reread.coverage.attributed_ns, direct.coverage.attributed_ns);
  EXPECT_EQ(reread.coverage.module_attributed_ns, direct.coverage.module_attributed_ns);
  EXPECT_EQ(reread.match->matched, direct.match->matched);
  EXPECT_EQ(reread.metadata.at("inputs.trace"), direct.metadata.at("inputs.trace"));
  // The read is not reported again.
  ASSERT_FALSE(rec.events.empty());
  EXPECT_TRUE(std::holds_alternative<progress::InductorRead>(rec.events[0]));
}

TEST(PipelineAttribute, ExtraMetadataAndAllRangesReachTheProfile) {
  opprof::testing::TempDir tmp;
  AttributeRequest r;
  r.trace = fixture("lstm/trace.json.gz");
  r.extra_metadata = {{"capture.backend", "torch"}};
  const AttributeResult kept = attribute_capture(r);
  r.all_ranges = true;
  const AttributeResult all = attribute_capture(r);
  write_profile(kept, tmp.file("kept.db"));
  write_profile(all, tmp.file("all.db"));
  EXPECT_EQ(ProfileReader(tmp.file("kept.db")).meta("capture.backend"), "torch");
  EXPECT_GT(range_rows(tmp.file("all.db")), range_rows(tmp.file("kept.db")));
}

TEST(PipelineAttribute, AMetricTheChipCannotCollectIsAnErrorAtItsLine) {
  opprof::testing::TempDir tmp;
  std::ofstream(tmp.file("m.tsv")) << "# mine\ndram__bytes_reed.sum\tsum\tdram\t*\t\tDRAM\tbyte\n";
  AttributeRequest r;
  r.trace = fixture("lstm/trace.json.gz");
  r.metrics = tmp.file("m.tsv");
  r.output = tmp.file("p.db");
  try {
    attribute_capture(r);
    FAIL() << "an unknown metric was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), tmp.file("m.tsv"));
    EXPECT_EQ(e.position().line, 2u);
    EXPECT_EQ(e.message(), "dram__bytes_reed.sum: unknown metric for gh100 (not in its ncu catalog)");
  }
  EXPECT_FALSE(std::filesystem::exists(r.output));
}

TEST(PipelineAttribute, AnOutputThatIsADirectoryFailsBeforeTheRead) {
  opprof::testing::TempDir tmp;
  AttributeRequest r = gpt2_compiled();
  r.output = tmp.path().string();
  Recorder rec;
  EXPECT_THROW(attribute_capture(r, &rec), InputError);
  EXPECT_TRUE(rec.events.empty());
}
