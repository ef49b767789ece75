// The profile database: what the writer puts in every table (read back with plain SQLite, as a user
// would), the typed reader, atomic replacement, and the errors for files that are not profiles.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "opprof/store/profile_db.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/error.hpp"
#include "profile_fixture.hpp"

using namespace opprof;
using namespace opprof::testing;

namespace {

// A read-only connection for checking the file with nothing of opprof in between.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
      throw std::runtime_error(sqlite3_errmsg(db_));
  }
  ~RawDb() { sqlite3_close(db_); }
  // The first column of the first row as text; "NULL" for NULL, "<none>" without a row.
  std::string one(const std::string& sql) const {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
      throw std::runtime_error(std::string(sqlite3_errmsg(db_)) + " in " + sql);
    std::string out = "<none>";
    if (sqlite3_step(s) == SQLITE_ROW)
      out = sqlite3_column_type(s, 0) == SQLITE_NULL ? "NULL"
                                                      : reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return out;
  }
  long long count(const std::string& table) const { return std::stoll(one("SELECT count(*) FROM " + table)); }

 private:
  sqlite3* db_ = nullptr;
};

void write_raw_sqlite(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

std::string reader_error(const std::string& path) {
  try {
    ProfileReader r(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

std::string writer_error(const std::string& path, const ProfileInputs& in) {
  try {
    write_profile_db(path, in);
  } catch (const OutputError& e) {
    return e.what();
  }
  return "<no error>";
}

class ProfileDbTest : public ::testing::Test {
 protected:
  void SetUp() override { build_test_profile(p); }
  TestProfile p;
  TempDir dir;
};

TEST_F(ProfileDbTest, MetaHoldsVersionProvenanceAndTimelineFacts) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  RawDb db(path);
  EXPECT_EQ(db.one("SELECT value FROM meta WHERE key = 'schema_version'"), std::to_string(kProfileSchemaVersion));
  EXPECT_EQ(db.one("SELECT value FROM meta WHERE key = 'opprof_version'"), OPPROF_VERSION);
  // The caller's created_at replaces the writer's default.
  EXPECT_EQ(db.one("SELECT value FROM meta WHERE key = 'created_at'"), "2025-01-02T03:04:05Z");
  EXPECT_EQ(db.one("SELECT value FROM meta WHERE key = 'inputs.trace'"), "run/trace.json");
  EXPECT_EQ(db.one("SELECT value FROM meta WHERE key = 'timeline.source'"), "kineto");
  EXPECT_EQ(db.one("SELECT value FROM meta WHERE key = 'timeline.device.0.name'"), "NVIDIA H200");
  EXPECT_EQ(db.one("SELECT value FROM meta WHERE key = 'ncu.path'"), "run/ncu.csv.gz");
  EXPECT_EQ(db.one("SELECT value FROM meta WHERE key = 'ncu.used_mangled_names'"), "false");
  EXPECT_EQ(db.one("PRAGMA user_version"), std::to_string(kProfileSchemaVersion));
  EXPECT_EQ(db.one("PRAGMA application_id"), std::to_string(0x6f707066));
}

TEST_F(ProfileDbTest, DefaultCreatedAtIsUtcIso8601) {
  p.metadata.erase("created_at");
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  std::string created = RawDb(path).one("SELECT value FROM meta WHERE key = 'created_at'");
  ASSERT_EQ(created.size(), 20u) << created;
  EXPECT_EQ(created[4], '-');
  EXPECT_EQ(created[10], 'T');
  EXPECT_EQ(created.back(), 'Z');
}

TEST_F(ProfileDbTest, KernelsKeepEveryColumnWithNullForUnknown) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  RawDb db(path);
  EXPECT_EQ(db.count("kernels"), 7);
  EXPECT_EQ(db.count("kernel_names"), 6);  // k0 and k2 share a name
  EXPECT_EQ(db.one("SELECT kind || '|' || pid || '|' || device || '|' || stream || '|' || start_ns || '|' || end_ns "
                   "|| '|' || duration_ns FROM kernels WHERE id = 0"),
            "kernel|4242|0|7|1000|3000|2000");
  EXPECT_EQ(db.one("SELECT grid_x || ',' || grid_y || ',' || grid_z || ' ' || block_x || ',' || block_y || ',' || "
                   "block_z FROM kernels WHERE id = 0"),
            "128,2,1 256,1,1");
  EXPECT_EQ(db.one("SELECT correlation || ' ' || external_id || ' ' || registers_per_thread || ' ' || "
                   "shared_mem_bytes FROM kernels WHERE id = 0"),
            "11 501 64 16384");
  EXPECT_EQ(db.one("SELECT graph_id || ' ' || graph_node FROM kernels WHERE id = 1"), "3 9");
  // Unknown values are NULL, not 0.
  EXPECT_EQ(db.one("SELECT correlation FROM kernels WHERE id = 1"), "NULL");
  EXPECT_EQ(db.one("SELECT graph_id FROM kernels WHERE id = 0"), "NULL");
  EXPECT_EQ(db.one("SELECT grid_x FROM kernels WHERE id = 5"), "NULL");
  EXPECT_EQ(db.one("SELECT kind || ' ' || bytes FROM kernels WHERE id = 5"), "memcpy 4096");
  EXPECT_EQ(db.one("SELECT n.mangled FROM kernels k JOIN kernel_names n ON n.id = k.name_id WHERE k.id = 2"),
            "_Z22ampere_sgemm_128x64_nnv");
  EXPECT_EQ(db.one("SELECT mangled FROM kernel_view WHERE id = 1"), "NULL");
  // Quotes and punctuation in names survive as they are.
  EXPECT_EQ(db.one("SELECT name FROM kernel_view WHERE id = 3"),
            "void at::native::elementwise_kernel<128, 4>(int, \"add\")");
}

TEST_F(ProfileDbTest, LaunchesAndRanges) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  RawDb db(path);
  EXPECT_EQ(db.count("launches"), 3);
  EXPECT_EQ(db.one("SELECT api || ' ' || pid || ' ' || tid || ' ' || cpu_start_ns || ' ' || cpu_end_ns || ' ' || "
                   "correlation || ' ' || external_id FROM launches WHERE id = 0"),
            "cudaLaunchKernel 4242 77 900 950 11 501");
  EXPECT_EQ(db.one("SELECT external_id FROM launches WHERE id = 1"), "NULL");
  EXPECT_EQ(db.count("ranges"), 4);
  EXPECT_EQ(db.one("SELECT kind || ' ' || scope || ' ' || text || ' ' || domain || ' ' || owner || ' ' || depth || "
                   "' ' || external_id FROM ranges WHERE id = 0"),
            "operator thread aten::mm cpu_op 77 1 501");
  EXPECT_EQ(db.one("SELECT kind || ' ' || text FROM ranges WHERE id = 1"), "module h.0.mlp.c_fc");
  EXPECT_EQ(db.one("SELECT domain FROM ranges WHERE id = 1"), "NULL");
  EXPECT_EQ(db.one("SELECT depth FROM ranges WHERE id = 1"), "NULL");
  EXPECT_EQ(db.one("SELECT scope || ' ' || owner FROM ranges WHERE id = 2"), "stream 7");
}

TEST_F(ProfileDbTest, AttributionOneRowPerActivity) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  RawDb db(path);
  EXPECT_EQ(db.count("attribution"), 7);
  EXPECT_EQ(db.one("SELECT path || ' ' || confidence || ' ' || op_range_id || ' ' || op || ' ' || top_op || ' ' || "
                   "module || ' ' || module_source || ' ' || family FROM attribution WHERE kernel_id = 0"),
            "correlation 1.0 0 aten::mm aten::linear h.0.mlp.c_fc thread_range ampere_sgemm");
  EXPECT_EQ(db.one("SELECT path || '|' || fused_ops || '|' || fx_nodes || '|' || provenance_handle || '|' || "
                   "source_line || '|' || module_source FROM attribution WHERE kernel_id = 1"),
            "fusion|aten::add, aten::gelu|add, gelu|triton_poi_fused_add_gelu_0:1|model.py:12 in forward|fx_provenance");
  EXPECT_EQ(db.one("SELECT path || '|' || reason || '|' || module_source FROM attribution WHERE kernel_id = 4"),
            "none|no launch and no enclosing range|none");
  EXPECT_EQ(db.one("SELECT op FROM attribution WHERE kernel_id = 4"), "NULL");
  EXPECT_EQ(db.one("SELECT reason FROM attribution WHERE kernel_id = 0"), "NULL");
  EXPECT_EQ(db.one("SELECT opaque || ' ' || opaque_backend FROM attribution WHERE kernel_id = 6"), "1 cuDNN RNN");
  EXPECT_EQ(db.one("SELECT opaque FROM attribution WHERE kernel_id = 0"), "0");
  // The view answers "time per operator" without a join in the query.
  EXPECT_EQ(db.one("SELECT sum(duration_ns) FROM kernel_view WHERE op = 'aten::mm'"), "4000");
  EXPECT_EQ(db.one("SELECT sum(duration_ns) FROM kernel_view WHERE kind = 'kernel' AND path = 'none'"), "300");
}

TEST_F(ProfileDbTest, RangeAndAttributionTextIsStoredOnceAndReadThroughTheViews) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  RawDb db(path);
  // Every string once, numbered densely from 0, and each id the rows use is in it.
  EXPECT_EQ(db.one("SELECT count(*) = count(DISTINCT text) AND min(id) = 0 AND max(id) = count(*) - 1 FROM strings"),
            "1");
  EXPECT_EQ(db.one("SELECT count(*) FROM attribution_rows a WHERE NOT EXISTS (SELECT 1 FROM strings WHERE id = a.op_id) "
                   "AND a.op_id IS NOT NULL"),
            "0");
  // The two kernels of aten::mm name one string; the view gives it back per row.
  EXPECT_EQ(db.one("SELECT count(DISTINCT op_id) FROM attribution_rows WHERE kernel_id IN (0, 2)"), "1");
  EXPECT_EQ(db.one("SELECT count(*) FROM strings WHERE text = 'aten::mm'"), "1");
  EXPECT_EQ(db.one("SELECT group_concat(op, ',') FROM (SELECT op FROM attribution WHERE kernel_id IN (0, 2) "
                   "ORDER BY kernel_id)"),
            "aten::mm,aten::mm");
  // The range text and the enumeration names too: the operator range and the attribution share 'aten::mm'.
  EXPECT_EQ(db.one("SELECT r.text_id = a.op_id FROM range_rows r, attribution_rows a WHERE r.id = 0 AND a.kernel_id = 0"),
            "1");
  EXPECT_EQ(db.one("SELECT text FROM strings WHERE id = (SELECT phase_id FROM attribution_rows WHERE kernel_id = 0)"),
            "forward");
  // The views have version 4's columns, in its order.
  EXPECT_EQ(db.one("SELECT group_concat(name, ',') FROM pragma_table_info('ranges')"),
            "id,kind,scope,text,domain,pid,owner,device,start_ns,end_ns,depth,external_id,rank");
  EXPECT_EQ(db.one("SELECT group_concat(name, ',') FROM pragma_table_info('attribution')"),
            "kernel_id,path,confidence,op_range_id,op,top_op,module,module_source,fused_ops,fx_nodes,provenance_handle,"
            "source_line,family,reason,opaque,opaque_backend,phase,forward_op");
}

TEST_F(ProfileDbTest, KernelTimeByPhaseAndSourceLineIsSummedAtWriteAndReadBackAsAScanWould) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  const auto scan = [&](const char* column) {
    RawDb db(path);
    return db.one(fmt::format("SELECT group_concat(k || '=' || n || '/' || t, ';') FROM (SELECT COALESCE({}, '') AS k, "
                              "count(*) AS n, sum(duration_ns) AS t FROM kernel_view WHERE kind = 'kernel' GROUP BY 1 "
                              "ORDER BY 3 DESC, 1)",
                              column));
  };
  const auto read = [&](ProfileReader::KernelColumn column) {
    ProfileReader r(path);
    std::string out;
    for (const GroupStats& g : r.kernel_time_by(column))
      out += fmt::format("{}{}={}/{}", out.empty() ? "" : ";", g.key, g.kernels, g.time_ns);
    return out;
  };
  // The memcpy (k5) is not kernel time; k1 has a source line, the other five kernels none.
  EXPECT_EQ(read(ProfileReader::KernelColumn::kPhase), "forward=5/5700;other=1/300");
  EXPECT_EQ(read(ProfileReader::KernelColumn::kPhase), scan("phase"));
  EXPECT_EQ(read(ProfileReader::KernelColumn::kSourceLine), "=5/5500;model.py:12 in forward=1/500");
  EXPECT_EQ(read(ProfileReader::KernelColumn::kSourceLine), scan("source_line"));
  // A version 4 profile has no such table: the reader sums over the kernels itself, to the same figures.
  write_raw_sqlite(path, "DROP TABLE kernel_time_by; UPDATE meta SET value = '4' WHERE key = 'schema_version';"
                         "PRAGMA user_version = 4;");
  EXPECT_EQ(read(ProfileReader::KernelColumn::kPhase), "forward=5/5700;other=1/300");
  EXPECT_EQ(read(ProfileReader::KernelColumn::kSourceLine), "=5/5500;model.py:12 in forward=1/500");
}

TEST_F(ProfileDbTest, MetricsOnlyValuesPresent) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  RawDb db(path);
  EXPECT_EQ(db.count("metrics"), 6);
  EXPECT_EQ(db.one("SELECT name || ' ' || unit || ' ' || aggregate || ' ' || axis || ' ' || present FROM metrics "
                   "WHERE id = 1"),
            "sm__throughput.avg.pct_of_peak_sustained_elapsed % wmean compute 1");
  EXPECT_EQ(db.one("SELECT reason FROM metrics WHERE id = 0"), "why gpu__time_duration.sum");
  EXPECT_EQ(db.one("SELECT name || ' ' || present FROM metrics WHERE id = 5"), "lts__t_sector_hit_rate.pct 0");
  EXPECT_EQ(db.one("SELECT unit FROM metrics WHERE id = 5"), "NULL");
  // Three matched kernels x five metrics, less the Triton kernel's missing tensor value.
  EXPECT_EQ(db.count("kernel_metrics"), 14);
  EXPECT_EQ(db.one("SELECT value FROM kernel_metrics WHERE kernel_id = 2 AND metric_id = 0"), "1950.0");
  EXPECT_EQ(db.one("SELECT value FROM kernel_metrics WHERE kernel_id = 1 AND metric_id = 3"), "<none>");
  EXPECT_EQ(db.one("SELECT value FROM kernel_metric_view WHERE kernel_id = 1 AND metric = "
                   "'dram__throughput.avg.pct_of_peak_sustained_elapsed'"),
            "85.0");
}

TEST_F(ProfileDbTest, NcuRowsMatchedAndUnmatched) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  RawDb db(path);
  EXPECT_EQ(db.count("ncu_rows"), 4);
  EXPECT_EQ(db.one("SELECT ncu_id || ' ' || kernel_name || ' ' || grid_x || ' ' || block_x || ' ' || csv_line || ' ' "
                   "|| matched_kernel_id FROM ncu_rows WHERE row = 1"),
            "2 ampere_sgemm_128x64_nn 128 256 3 2");
  EXPECT_EQ(db.one("SELECT matched_kernel_id FROM ncu_rows WHERE row = 3"), "NULL");
  EXPECT_EQ(db.count("match_notes"), 1);
  EXPECT_EQ(db.one("SELECT note FROM match_notes"), "ncu row 3 (unknown_kernel) has no timeline kernel of that identity");
}

TEST_F(ProfileDbTest, GroupTablesAndGroupMetrics) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  RawDb db(path);
  EXPECT_EQ(db.count("operators"), 4);
  EXPECT_EQ(db.count("modules"), 3);
  EXPECT_EQ(db.count("kernel_families"), 1);
  EXPECT_EQ(db.one("SELECT key || ' ' || kernels || ' ' || time_ns || ' ' || counted_time_ns || ' ' || "
                   "dram_bandwidth_gbps || ' ' || bottleneck FROM operators WHERE id = 0"),
            "aten::mm 2 4000 4000 1200.5 tensor pipe idle");
  EXPECT_EQ(db.one("SELECT fused_ops FROM operators WHERE id = 2"), "aten::add, aten::gelu");
  EXPECT_EQ(db.one("SELECT fused_ops FROM operators WHERE id = 0"), "NULL");
  // -1 (unknown) derived figures are NULL.
  EXPECT_EQ(db.one("SELECT coalesce(dram_bytes, 'null') || ' ' || coalesce(flops, 'null') || ' ' || "
                   "coalesce(bottleneck, 'null') FROM operators WHERE id = 1"),
            "null null null");
  EXPECT_EQ(db.one("SELECT value FROM group_metrics WHERE group_kind = 'operator' AND key = 'aten::mm' AND metric = "
                   "'sm__throughput.avg.pct_of_peak_sustained_elapsed'"),
            "41.0");
  // aten::mm 5 + aten::_cudnn_rnn 0 + triton 4 + aten::add 0; modules 5 + 5 + 4; families 5.
  EXPECT_EQ(db.one("SELECT count(*) FROM group_metrics WHERE group_kind = 'operator'"), "9");
  EXPECT_EQ(db.one("SELECT count(*) FROM group_metrics WHERE group_kind = 'module'"), "14");
  EXPECT_EQ(db.one("SELECT count(*) FROM group_metrics WHERE group_kind = 'family'"), "5");
}

TEST_F(ProfileDbTest, CoverageUnattributedOpaque) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  RawDb db(path);
  EXPECT_EQ(db.count("coverage"), 1);
  EXPECT_EQ(db.one("SELECT kernel_time_ns || ' ' || kernels || ' ' || attributed_ns || ' ' || module_attributed_ns || "
                   "' ' || opaque_ns FROM coverage"),
            "6000 6 5700 4500 1000");
  EXPECT_EQ(db.one("SELECT path_correlation_ns || ' ' || path_enclosure_ns || ' ' || path_fusion_ns || ' ' || "
                   "path_none_ns FROM coverage"),
            "5000 200 500 300");
  EXPECT_EQ(db.one("SELECT has_ncu || ' ' || ncu_rows || ' ' || ncu_matched || ' ' || ncu_unmatched_rows || ' ' || "
                   "ncu_unmatched_kernels || ' ' || ncu_grid_block_disagreements FROM coverage"),
            "1 4 3 1 3 0");
  EXPECT_EQ(db.one("SELECT family || '|' || reason || '|' || kernels || '|' || time_ns FROM unattributed"),
            "mystery_kernel|no launch and no enclosing range|1|300");
  EXPECT_EQ(db.one("SELECT backend || ' ' || time_ns FROM opaque_backends"), "cuDNN RNN 1000");
}

TEST_F(ProfileDbTest, WithoutNcuTheCounterTablesAreEmpty) {
  p.agg.operators[0].metric.clear();
  p.agg.operators[1].metric.clear();
  p.agg.operators[2].metric.clear();
  p.agg.modules.clear();
  p.agg.families.clear();
  p.cov.has_ncu = false;
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs(/*with_ncu=*/false));
  RawDb db(path);
  EXPECT_EQ(db.count("metrics"), 0);
  EXPECT_EQ(db.count("kernel_metrics"), 0);
  EXPECT_EQ(db.count("ncu_rows"), 0);
  EXPECT_EQ(db.count("group_metrics"), 0);
  EXPECT_EQ(db.one("SELECT value FROM meta WHERE key = 'ncu.path'"), "<none>");
  ProfileReader r(path);
  EXPECT_TRUE(r.metrics().empty());
  EXPECT_FALSE(r.coverage().has_ncu);
  auto ops = r.groups(GroupBy::kOperator);
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_TRUE(ops[0].metric.empty());
}

TEST_F(ProfileDbTest, ReaderGivesTypedAccess) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  ProfileReader r(path);
  EXPECT_EQ(r.path(), path);
  EXPECT_EQ(r.schema_version(), kProfileSchemaVersion);
  EXPECT_EQ(r.meta("timeline.clocks_locked"), "false");
  EXPECT_EQ(r.meta("no.such.key", "fallback"), "fallback");
  EXPECT_EQ(r.activity_count(), 7u);

  const Coverage& c = r.coverage();
  EXPECT_EQ(c.kernel_time_ns, 6000);
  EXPECT_EQ(c.kernels, 6u);
  EXPECT_EQ(c.attributed_ns, 5700);
  EXPECT_EQ(c.module_attributed_ns, 4500);
  EXPECT_EQ(c.opaque_ns, 1000);
  EXPECT_EQ(c.by_path_ns[static_cast<int>(AttributionPath::kCorrelation)], 5000);
  EXPECT_EQ(c.by_path_ns[static_cast<int>(AttributionPath::kEnclosure)], 200);
  EXPECT_EQ(c.by_path_ns[static_cast<int>(AttributionPath::kFusion)], 500);
  EXPECT_EQ(c.by_path_ns[static_cast<int>(AttributionPath::kNone)], 300);
  EXPECT_DOUBLE_EQ(c.pct(c.attributed_ns), 95.0);
  ASSERT_EQ(c.unattributed.size(), 1u);
  EXPECT_EQ(c.unattributed[0].family, "mystery_kernel");
  EXPECT_EQ(c.unattributed[0].time_ns, 300);
  ASSERT_EQ(c.opaque_backends.size(), 1u);
  EXPECT_EQ(c.opaque_backends[0].first, "cuDNN RNN");
  EXPECT_TRUE(c.has_ncu);
  EXPECT_EQ(c.ncu_rows, 4u);
  EXPECT_EQ(c.ncu_matched, 3u);
  EXPECT_EQ(c.ncu_unmatched_rows, 1u);
  EXPECT_EQ(c.ncu_unmatched_kernels, 3u);

  ASSERT_EQ(r.metrics().size(), 6u);
  EXPECT_FALSE(r.metrics()[5].present);
  std::size_t sm = r.metric_index("sm__throughput.avg.pct_of_peak_sustained_elapsed");
  ASSERT_EQ(sm, 1u);
  EXPECT_EQ(r.metric_index("nope"), ProfileReader::npos);

  auto ops = r.groups(GroupBy::kOperator, 3);
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(r.group_count(GroupBy::kOperator), 4u);
  EXPECT_EQ(ops[0].key, "aten::mm");
  EXPECT_EQ(ops[0].kernels, 2u);
  EXPECT_EQ(ops[0].time_ns, 4000);
  EXPECT_DOUBLE_EQ(ops[0].metric[sm], 41.0);
  EXPECT_TRUE(std::isnan(ops[0].metric[5]));  // the missing metric
  EXPECT_DOUBLE_EQ(ops[0].dram_bandwidth_gbps, 1200.5);
  EXPECT_EQ(ops[0].bottleneck, "tensor pipe idle");
  EXPECT_EQ(ops[1].dram_bytes, -1);
  EXPECT_TRUE(std::isnan(ops[1].metric[sm]));
  EXPECT_EQ(ops[2].fused_ops, "aten::add, aten::gelu");
  EXPECT_TRUE(std::isnan(ops[2].metric[3]));
  auto modules = r.groups(GroupBy::kModule);
  ASSERT_EQ(modules.size(), 3u);
  EXPECT_EQ(modules[2].key, "h.0.mlp.act");
  EXPECT_EQ(r.groups(GroupBy::kFamily).size(), 1u);

  EXPECT_EQ(r.match_notes().size(), 1u);

  std::vector<ProfileKernel> kernels;
  r.for_each_kernel([&](const ProfileKernel& k) { kernels.push_back(k); });
  ASSERT_EQ(kernels.size(), 7u);
  EXPECT_EQ(kernels[1].name, "triton_poi_fused_add_gelu_0");
  EXPECT_EQ(kernels[1].path, "fusion");
  EXPECT_FLOAT_EQ(static_cast<float>(kernels[1].confidence), 0.9f);
  EXPECT_EQ(kernels[1].module, "h.0.mlp.act");
  EXPECT_EQ(kernels[4].reason, "no launch and no enclosing range");
  EXPECT_EQ(kernels[5].kind, "memcpy");
  EXPECT_EQ(kernels[6].opaque_backend, "cuDNN RNN");
  EXPECT_EQ(kernels[6].start_ns, 8000);
  EXPECT_EQ(kernels[6].end_ns, 9000);
}

TEST_F(ProfileDbTest, WritingOverAnExistingProfileReplacesIt) {
  std::string path = dir.file("profile.db");
  p.metadata["run"] = "first";
  write_profile_db(path, p.inputs());
  p.metadata["run"] = "second";
  p.cov.kernel_time_ns = 12345;
  write_profile_db(path, p.inputs());
  ProfileReader r(path);
  EXPECT_EQ(r.meta("run"), "second");
  EXPECT_EQ(r.coverage().kernel_time_ns, 12345);
  EXPECT_EQ(r.activity_count(), 7u);  // replaced, not appended to
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"profile.db"});
}

TEST_F(ProfileDbTest, ABadRowMidWriteLeavesTheOldFileAndNoTemporary) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  const std::string before = slurp(path);
  // The last activity's family names a string that is not in the table: the writer finds it only when
  // it reaches that row, after kernels, launches and ranges are written.
  p.attr.family[6] = 9999;
  std::string err = writer_error(path, p.inputs());
  EXPECT_NE(err.find("cannot write profile database " + path), std::string::npos) << err;
  EXPECT_NE(err.find("attribution row 6: family has string id 9999"), std::string::npos) << err;
  EXPECT_EQ(slurp(path), before);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"profile.db"});
}

TEST_F(ProfileDbTest, AnSqliteFailureCarriesSqlitesMessage) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  const std::string before = slurp(path);
  p.attr.confidence[3] = std::nanf("");
  std::string err = writer_error(path, p.inputs());
  EXPECT_NE(err.find("NOT NULL constraint failed: attribution_rows.confidence"), std::string::npos) << err;
  EXPECT_EQ(slurp(path), before);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"profile.db"});
}

TEST_F(ProfileDbTest, AFailedRenameRemovesTheTemporary) {
  // A directory in the way makes the final rename fail after everything else succeeded.
  std::string path = dir.file("profile.db");
  std::filesystem::create_directory(path);
  std::string err = writer_error(path, p.inputs());
  EXPECT_NE(err.find("cannot rename"), std::string::npos) << err;
  EXPECT_TRUE(std::filesystem::is_directory(path));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"profile.db"});
}

TEST_F(ProfileDbTest, AMissingDirectoryIsAClearError) {
  std::string err = writer_error(dir.file("no/such/dir/profile.db"), p.inputs());
  EXPECT_NE(err.find("cannot write profile database"), std::string::npos) << err;
  EXPECT_NE(err.find("unable to open database file"), std::string::npos) << err;
}

// Every row of every table, as text, for comparing two databases.
std::string dump_tables(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::string out;
  auto append = [](void* o, int n, char** values, char**) {
    auto& text = *static_cast<std::string*>(o);
    for (int i = 0; i < n; ++i) text += (values[i] ? values[i] : "NULL") + std::string("|");
    text += "\n";
    return 0;
  };
  std::vector<std::string> tables;
  sqlite3_exec(
      db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
      [](void* t, int, char** v, char**) {
        static_cast<std::vector<std::string>*>(t)->push_back(v[0]);
        return 0;
      },
      &tables, nullptr);
  for (const std::string& t : tables) {
    out += "-- " + t + "\n";
    sqlite3_exec(db, ("SELECT * FROM " + t + (t == "meta" ? " WHERE key != 'created_at'" : "")).c_str(), append,
                 &out, nullptr);
  }
  sqlite3_close(db);
  return out;
}

TEST_F(ProfileDbTest, TimelineTablesWrittenDuringAttributionGiveTheSameDatabase) {
  const std::string once = dir.file("once.db");
  write_profile_db(once, p.inputs());
  // The kernel and launch tables go in on a helper thread while this one interns strings, as attribution
  // does (growing the string table the helper reads names from).
  const std::string overlapped = dir.file("overlapped.db");
  {
    ProfileDbWriter writer(overlapped, p.tl, /*background=*/true);
    for (int i = 0; i < 20000; ++i) p.tl.strings.intern(fmt::format("family {}", i));
    writer.finish(p.inputs());
  }
  EXPECT_EQ(dump_tables(once), dump_tables(overlapped));
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"once.db", "overlapped.db"}));
}

TEST_F(ProfileDbTest, AttributionRowsWrittenInPartsGiveTheSameDatabase) {
  const std::string once = dir.file("once.db");
  write_profile_db(once, p.inputs());
  ASSERT_EQ(p.tl.kernels.size(), 7u);
  // 7 rows, 2 a part: four parts of 2, 2, 2 and 1 rows; 1 a part: still four, of 2, 2, 2 and 1.
  for (std::size_t rows_per_part : {2, 1, 7}) {
    const std::string parted = dir.file(fmt::format("parted-{}.db", rows_per_part));
    {
      ProfileDbWriter writer(parted, p.tl, /*background=*/true, rows_per_part);
      EXPECT_EQ(dir.entries().size(), rows_per_part == 7 ? 3u : 6u);  // once.db, the temporary and its parts
      writer.finish(p.inputs());
    }
    EXPECT_EQ(dump_tables(once), dump_tables(parted)) << rows_per_part << " rows a part";
    std::filesystem::remove(parted);
    EXPECT_EQ(dir.entries(), (std::vector<std::string>{"once.db"}));
  }
}

TEST_F(ProfileDbTest, AFailureAtALaterAttributionPartLeavesNoFile) {
  const std::string path = dir.file("profile.db");
  std::string err = "<no error>";
  try {
    ProfileDbWriter writer(path, p.tl, /*background=*/true, /*rows_per_part=*/2);
    // The third part's file replaced by a directory: the copy cannot attach it.
    const std::string part = path + ".attribution-2.tmp-" + std::to_string(getpid());
    ASSERT_TRUE(std::filesystem::remove(part));
    std::filesystem::create_directory(part);
    writer.finish(p.inputs());
  } catch (const OutputError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("cannot write profile database " + path + ": SQLite: "), std::string::npos) << err;
  EXPECT_TRUE(dir.entries().empty());
}

TEST_F(ProfileDbTest, AWriteLeftUnfinishedOrFailingInTheHelperLeavesNoFile) {
  const std::string path = dir.file("profile.db");
  { ProfileDbWriter writer(path, p.tl, /*background=*/true); }  // attribution failed: no finish()
  EXPECT_TRUE(dir.entries().empty());

  p.tl.kernels.name[1] = 99999;  // a string id the timeline does not have: the helper thread fails
  std::string err = "<no error>";
  try {
    ProfileDbWriter writer(path, p.tl, /*background=*/true);
    writer.finish(p.inputs());
  } catch (const OutputError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("cannot write profile database " + path + ": kernels row 1: name has string id 99999"),
            std::string::npos)
      << err;
  EXPECT_TRUE(dir.entries().empty());
}

TEST_F(ProfileDbTest, InconsistentInputsAreRejectedBeforeWriting) {
  std::string path = dir.file("profile.db");
  p.attr.reason.pop_back();
  std::string err = writer_error(path, p.inputs());
  EXPECT_NE(err.find("attribution: a column has 6 entries where 7 rows are expected"), std::string::npos) << err;
  EXPECT_TRUE(dir.entries().empty());

  build_test_profile(p = TestProfile{});
  p.attr.op_range[4] = 99;
  err = writer_error(path, p.inputs());
  EXPECT_NE(err.find("attribution row 4: operator range 99 is not in the timeline"), std::string::npos) << err;
  EXPECT_TRUE(dir.entries().empty());

  ProfileInputs none;
  EXPECT_NE(writer_error(path, none).find("a timeline, its attribution and its coverage are required"),
            std::string::npos);
}

TEST_F(ProfileDbTest, ReaderRejectsWhatIsNotAProfile) {
  EXPECT_NE(reader_error(dir.file("missing.db")).find("cannot open profile: No such file"), std::string::npos)
      << reader_error(dir.file("missing.db"));

  std::string text = dir.file("notes.txt");
  std::ofstream(text) << "this is not a database, just some text that is long enough to look like a header\n";
  std::string err = reader_error(text);
  EXPECT_NE(err.find(text + ": not an opprof profile: not an SQLite database"), std::string::npos) << err;

  std::string other = dir.file("other.db");
  write_raw_sqlite(other, "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);");
  err = reader_error(other);
  EXPECT_NE(err.find(other + ": not an opprof profile"), std::string::npos) << err;
  EXPECT_NE(err.find("without opprof's meta table"), std::string::npos) << err;

  std::string no_version = dir.file("no_version.db");
  write_raw_sqlite(no_version, "CREATE TABLE meta (key TEXT, value TEXT); INSERT INTO meta VALUES ('a', 'b');");
  err = reader_error(no_version);
  EXPECT_NE(err.find("not an opprof profile: its meta table has no schema_version"), std::string::npos) << err;

  // Another program's database with a meta table and a schema_version is still not a profile: the header's
  // application_id says whose file it is.
  std::string foreign = dir.file("foreign.db");
  write_raw_sqlite(foreign, "CREATE TABLE meta (key TEXT, value TEXT); INSERT INTO meta VALUES ('schema_version', '1');");
  err = reader_error(foreign);
  EXPECT_NE(err.find(foreign + ": not an opprof profile: its SQLite application_id is 0x0, not opprof's 0x6f707066"),
            std::string::npos)
      << err;

  err = reader_error(dir.path().string());
  EXPECT_NE(err.find("is a directory"), std::string::npos) << err;
}

TEST_F(ProfileDbTest, ReaderRejectsAHeaderThatDisagreesWithTheMetaTable) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 7;", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  std::string err = reader_error(path);
  EXPECT_NE(err.find(fmt::format("damaged opprof profile: PRAGMA user_version is 7 but meta.schema_version is {}",
                                 kProfileSchemaVersion)),
            std::string::npos)
      << err;
}

TEST_F(ProfileDbTest, ReaderRejectsAnotherSchemaVersion) {
  std::string path = dir.file("profile.db");
  write_profile_db(path, p.inputs());
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const std::string sql = fmt::format(
        "UPDATE meta SET value = '{}' WHERE key = 'schema_version';"
        "UPDATE meta SET value = '9.9.9' WHERE key = 'opprof_version';",
        kProfileSchemaVersion + 1);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  std::string err = reader_error(path);
  EXPECT_NE(err.find(fmt::format("profile has schema version {}; this opprof ({}) reads schema version {}",
                                 kProfileSchemaVersion + 1, OPPROF_VERSION, kProfileSchemaVersion)),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("written by opprof 9.9.9"), std::string::npos) << err;
}

TEST_F(ProfileDbTest, AnEmptyTimelineMakesAValidProfile) {
  TestProfile empty;
  std::string path = dir.file("empty.db");
  write_profile_db(path, empty.inputs(/*with_ncu=*/false));
  ProfileReader r(path);
  EXPECT_EQ(r.activity_count(), 0u);
  EXPECT_EQ(r.coverage().kernel_time_ns, 0);
  EXPECT_TRUE(r.groups(GroupBy::kOperator).empty());
}

}  // namespace
