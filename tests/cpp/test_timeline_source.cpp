// read_timeline / sniff_timeline_format: the format comes from the file's first bytes, whatever its name.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include "opprof/ingest/timeline_source.hpp"
#include "tracer_log/format.hpp"
#include "opprof/util/error.hpp"

namespace opprof {
namespace {

using namespace tracelog;

// Files named "trace.bin" on purpose: nothing may depend on the extension.
class TempFile {
 public:
  TempFile() {
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("opprof_test_source_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_trace.bin"))
                .string();
    std::filesystem::remove(path_);
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }
  void write(const std::string& bytes) const {
    std::ofstream(path_, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 private:
  std::string path_;
};

const std::string kKineto = R"({"traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.0, "dur": 2.0,
   "args": {"device": 0, "stream": 7, "correlation": 5}}
]})";

TEST(TimelineSource, TracerLogByMagic) {
  LogBuilder b(77);
  b.string(1, "_Z1kv");
  KernelRecord k{};
  k.start_ns = 100;
  k.end_ns = 200;
  k.correlation_id = 3;
  k.name_sid = 1;
  b.add(RecordType::kKernel, k);
  TempFile f;
  f.write(b.bytes());
  EXPECT_EQ(sniff_timeline_format(f.path()), TimelineFormat::kTracerLog);
  KinetoReadStats stats;
  TimelineFormat format = TimelineFormat::kKinetoJson;
  const Timeline tl = read_timeline(f.path(), &stats, {}, &format);
  EXPECT_EQ(format, TimelineFormat::kTracerLog);
  ASSERT_EQ(tl.kernels.size(), 1u);
  EXPECT_EQ(tl.metadata.at("source"), "opprof-tracer");
  EXPECT_EQ(stats.bytes, b.bytes().size());
  EXPECT_EQ(stats.events, 1u);
}

TEST(TimelineSource, NsysSqliteByHeader) {
  TempFile f;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(f.path().c_str(), &db), SQLITE_OK);
  const char* sql =
      "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
      "INSERT INTO StringIds VALUES (1, 'x');";
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(sniff_timeline_format(f.path()), TimelineFormat::kNsysSqlite);
}

TEST(TimelineSource, KinetoJsonPlainAndGzip) {
  TempFile plain;
  plain.write(kKineto);
  EXPECT_EQ(sniff_timeline_format(plain.path()), TimelineFormat::kKinetoJson);
  const Timeline a = read_timeline(plain.path());
  ASSERT_EQ(a.kernels.size(), 1u);
  EXPECT_EQ(a.metadata.at("source"), "kineto");

  TempFile gz;
  gzFile out = gzopen(gz.path().c_str(), "wb6");
  ASSERT_NE(out, nullptr);
  gzwrite(out, kKineto.data(), static_cast<unsigned>(kKineto.size()));
  gzclose(out);
  EXPECT_EQ(sniff_timeline_format(gz.path()), TimelineFormat::kKinetoGzip);
  TimelineFormat format = TimelineFormat::kKinetoJson;
  const Timeline b = read_timeline(gz.path(), nullptr, {}, &format);
  EXPECT_EQ(format, TimelineFormat::kKinetoGzip);
  ASSERT_EQ(b.kernels.size(), 1u);
}

TEST(TimelineSource, ShortAndMissingFiles) {
  TempFile tiny;
  tiny.write("OPP");  // shorter than any magic: taken for JSON, whose reader says what is wrong
  EXPECT_EQ(sniff_timeline_format(tiny.path()), TimelineFormat::kKinetoJson);
  EXPECT_THROW(read_timeline(tiny.path()), InputError);
  EXPECT_THROW(sniff_timeline_format("/nonexistent/trace.opprof"), InputError);
  // A tracer log with a bad header still goes to the tracer reader, which names the problem.
  TempFile cut;
  cut.write(std::string(kMagic, sizeof kMagic) + "xx");
  EXPECT_THROW(read_timeline(cut.path()), InputError);
}

}  // namespace
}  // namespace opprof
