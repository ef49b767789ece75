// `opprof compare`: alignment of two profiles' kernels by normalized name, agreement of operator, top-level
// operator and module weighted by A's kernel time, ncu rows per pair, and the report. Hand-built profiles
// (profile_fixture.hpp) give figures checkable by hand; the real gpt2_eager capture, attributed twice and
// edited with SQL, checks the same on a real profile.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sqlite3.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "opprof/compare/compare_report.hpp"
#include "opprof/compare/profile_compare.hpp"
#include "opprof/store/profile_db.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/error.hpp"
#include "profile_fixture.hpp"

using namespace opprof;
using namespace opprof::testing;

namespace {

// Runs SQL on a profile as a user editing the file would.
void edit(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string message = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message << " in " << sql;
}

// The first column of the first row as an integer.
std::int64_t query_int(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_stmt* s = nullptr;
  std::int64_t v = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK &&
      sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

ProfileComparison compare_files(const std::string& a, const std::string& b, const CompareOptions& options = {}) {
  return compare_profiles(ProfileReader(a), ProfileReader(b), options);
}

double share_pct(std::int64_t part, std::int64_t whole) {
  return 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

class CompareTest : public ::testing::Test {
 protected:
  void SetUp() override { build_test_profile(p); }
  std::string write(const std::string& name, const TestProfile& profile, bool with_ncu = true) {
    std::string path = dir.file(name);
    write_profile_db(path, profile.inputs(with_ncu));
    return path;
  }
  TestProfile p;
  TempDir dir;
};

}  // namespace

TEST_F(CompareTest, IdenticalProfilesAgreeFully) {
  const std::string a = write("a.db", p), b = write("b.db", p);
  const ProfileComparison c = compare_files(a, b);
  // Kernels only: k5 (memcpy) is left out; 6000 ns of kernel time.
  EXPECT_EQ(c.a.kernels, 6u);
  EXPECT_EQ(c.b.kernels, 6u);
  EXPECT_EQ(c.a.time_ns, 6000);
  EXPECT_EQ(c.aligned, 6u);
  EXPECT_EQ(c.aligned_ns_a, 6000);
  EXPECT_TRUE(c.ordered);
  EXPECT_EQ(c.a.unaligned + c.b.unaligned, 0u);
  for (const Agreement* ag : {&c.op, &c.top_op, &c.module}) {
    EXPECT_EQ(ag->pairs, 6u);
    EXPECT_EQ(ag->time_ns, 6000);
    EXPECT_DOUBLE_EQ(ag->pct, 100.0);
  }
  EXPECT_TRUE(c.a.has_ncu);
  EXPECT_EQ(c.a.ncu_matched, 3u);
  EXPECT_EQ(c.ncu_both_matched, 3u);
  EXPECT_EQ(c.ncu_same_row, 3u);
  EXPECT_EQ(c.ncu_same_row_ns, 4500);
  EXPECT_EQ(c.ncu_only_a + c.ncu_only_b + c.ncu_differences_total, 0u);
  EXPECT_EQ(c.disagreeing_pairs, 0u);
  EXPECT_TRUE(c.disagreements.empty());

  const std::string text = render_comparison_text(c);
  EXPECT_NE(text.find("Aligned 6 pairs"), std::string::npos) << text;
  EXPECT_NE(text.find("operator             100.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("to the same ncu row: 3"), std::string::npos) << text;
  EXPECT_NE(text.find("Disagreements: none"), std::string::npos) << text;
}

TEST_F(CompareTest, AllActivityAlsoAlignsTheMemcpy) {
  const std::string a = write("a.db", p), b = write("b.db", p);
  CompareOptions options;
  options.all_activity = true;
  const ProfileComparison c = compare_files(a, b, options);
  EXPECT_EQ(c.a.kernels, 7u);
  EXPECT_EQ(c.aligned, 7u);
  EXPECT_EQ(c.aligned_ns_a, 6500);
  EXPECT_DOUBLE_EQ(c.op.pct, 100.0);

  // The tracer names the copy "Memcpy HtoD" where torch.profiler wrote "Memcpy HtoD (Pageable -> Device)".
  p.tl.kernels.name[5] = p.tl.strings.intern("Memcpy HtoD");
  p.attr.op[5] = p.tl.strings.intern("aten::copy_");
  const ProfileComparison t = compare_files(a, write("tracer.db", p), options);
  EXPECT_EQ(t.aligned, 7u);
  EXPECT_DOUBLE_EQ(t.op.pct, share_pct(6000, 6500));
  ASSERT_EQ(t.disagreements.size(), 1u);
  EXPECT_EQ(t.disagreements[0].kernel, "Memcpy HtoD");
  EXPECT_EQ(t.disagreements[0].op_b, "aten::copy_");
}

TEST_F(CompareTest, OneChangedOperatorLowersAgreementByItsTimeShare) {
  const std::string a = write("a.db", p);
  p.attr.op[2] = p.tl.strings.intern("aten::addmm");  // k2, 2000 of 6000 ns
  p.attr.module[3] = p.tl.strings.intern("h.0.mlp");  // k3, 200 ns: module only
  const std::string b = write("b.db", p);
  const ProfileComparison c = compare_files(a, b);
  EXPECT_EQ(c.aligned, 6u);
  EXPECT_EQ(c.op.pairs, 5u);
  EXPECT_EQ(c.op.time_ns, 4000);
  EXPECT_DOUBLE_EQ(c.op.pct, share_pct(4000, 6000));
  EXPECT_DOUBLE_EQ(c.top_op.pct, 100.0);
  EXPECT_DOUBLE_EQ(c.module.pct, share_pct(5800, 6000));
  EXPECT_EQ(c.disagreeing_pairs, 2u);
  EXPECT_EQ(c.disagreeing_ns, 2200);
  ASSERT_EQ(c.disagreements.size(), 2u);
  const Disagreement& d = c.disagreements[0];  // the larger first
  EXPECT_EQ(d.kernel, "ampere_sgemm_128x64_nn");
  EXPECT_EQ(d.op_a, "aten::mm");
  EXPECT_EQ(d.op_b, "aten::addmm");
  EXPECT_EQ(d.top_op_a, "aten::linear");
  EXPECT_EQ(d.top_op_b, "aten::linear");
  EXPECT_EQ(d.module_a, "h.0.mlp.c_proj");
  EXPECT_EQ(d.module_b, "h.0.mlp.c_proj");
  EXPECT_EQ(d.kernels, 1u);
  EXPECT_EQ(d.time_ns, 2000);
  EXPECT_EQ(d.first_id_a, 2);
  EXPECT_EQ(d.first_id_b, 2);
  EXPECT_EQ(c.disagreements[1].kernel, "at::native::elementwise_kernel");
  EXPECT_EQ(c.disagreements[1].module_a, "");
  EXPECT_EQ(c.disagreements[1].module_b, "h.0.mlp");

  const std::string text = render_comparison_text(c);
  EXPECT_NE(text.find("operator              66.7%"), std::string::npos) << text;
  EXPECT_NE(text.find("operator  A    aten::mm\n"), std::string::npos) << text;
  EXPECT_NE(text.find("B    aten::addmm\n"), std::string::npos) << text;
  EXPECT_NE(text.find("top op    both aten::linear\n"), std::string::npos) << text;
  EXPECT_NE(text.find("module    A    (none)\n"), std::string::npos) << text;

  CompareOptions one;
  one.top = 1;
  EXPECT_EQ(compare_files(a, b, one).disagreements.size(), 1u);
  EXPECT_EQ(compare_files(a, b, one).disagreement_groups, 2u);
}

TEST_F(CompareTest, RepeatedDisagreementsAreGroupedAndTimeIsAsWeightedByA) {
  const std::string a = write("a.db", p);
  // Both sgemm kernels (2000 ns each) lose their module in B, and B's durations differ: A's count.
  p.attr.module[0] = p.attr.module[2] = p.tl.strings.intern("h.0.mlp");
  p.tl.kernels.end_ns[0] = p.tl.kernels.start_ns[0] + 100;
  p.tl.kernels.end_ns[2] = p.tl.kernels.start_ns[2] + 100;
  const std::string b = write("b.db", p);
  const ProfileComparison c = compare_files(a, b);
  EXPECT_EQ(c.aligned_ns_a, 6000);
  EXPECT_EQ(c.aligned_ns_b, 2200);
  EXPECT_DOUBLE_EQ(c.module.pct, share_pct(2000, 6000));
  ASSERT_EQ(c.disagreement_groups, 2u);  // c_fc -> h.0.mlp and c_proj -> h.0.mlp are two differences
  EXPECT_EQ(c.disagreements[0].time_ns, 2000);
  EXPECT_EQ(c.disagreements[0].first_id_a, 0);  // equal times keep A's order
  EXPECT_EQ(c.disagreements[1].first_id_a, 2);
}

TEST_F(CompareTest, MangledAndDifferentlyDemangledNamesAlign) {
  const std::string a = write("a.db", p);
  // B spells the sgemm kernels mangled and the elementwise kernel as ncu's demangler does.
  auto& k = p.tl.kernels;
  k.name[0] = k.name[2] = p.tl.strings.intern("_Z22ampere_sgemm_128x64_nnv");
  k.name[3] = p.tl.strings.intern("void at::<unnamed>::elementwise_kernel<(int)128, (int)4>(int, T1)");
  const std::string b = write("b.db", p);
  const ProfileComparison c = compare_files(a, b);
  EXPECT_EQ(c.aligned, 6u);
  EXPECT_EQ(c.a.unaligned + c.b.unaligned, 0u);
  EXPECT_DOUBLE_EQ(c.op.pct, 100.0);
  EXPECT_EQ(c.ncu_same_row, 3u);
}

TEST_F(CompareTest, AnExtraKernelInBIsLeftUnaligned) {
  const std::string a = write("a.db", p);
  const std::string b = write("b.db", p);
  // Between k1 (ends 3500) and k2 (starts 4000), with an id after all others: order is by start time.
  edit(b,
       "INSERT INTO kernel_names (id, name) VALUES (100, 'void extra_kernel<float>(float*)');"
       "INSERT INTO kernels (id, kind, name_id, pid, device, context, stream, start_ns, end_ns, duration_ns, "
       "shared_mem_bytes, bytes) VALUES (100, 'kernel', 100, 4242, 0, 0, 7, 3600, 3700, 100, 0, 0);" +
       intern_sql("aten::extra") + intern_sql("h.0") +
       "INSERT INTO attribution_rows (kernel_id, path_id, confidence, op_id, module_id, module_source_id, opaque, "
       "phase_id) VALUES (100, " + string_id_sql("correlation") + ", 1, " + string_id_sql("aten::extra") + ", " +
       string_id_sql("h.0") + ", " + string_id_sql("thread_range") + ", 0, " + string_id_sql("forward") + ");");
  const ProfileComparison c = compare_files(a, b);
  EXPECT_EQ(c.b.kernels, 7u);
  EXPECT_EQ(c.aligned, 6u);
  EXPECT_EQ(c.a.unaligned, 0u);
  EXPECT_EQ(c.b.unaligned, 1u);
  EXPECT_EQ(c.b.unaligned_ns, 100);
  ASSERT_EQ(c.b.unaligned_names.size(), 1u);
  EXPECT_EQ(c.b.unaligned_names[0].kernel, "extra_kernel");
  EXPECT_DOUBLE_EQ(c.op.pct, 100.0);
  EXPECT_DOUBLE_EQ(c.module.pct, 100.0);
  EXPECT_EQ(c.disagreeing_pairs, 0u);

  // The other way round: A's extra kernel, B's missing one; agreement is of the aligned time only.
  const ProfileComparison r = compare_files(b, a);
  EXPECT_EQ(r.aligned, 6u);
  EXPECT_EQ(r.a.unaligned, 1u);
  EXPECT_EQ(r.aligned_ns_a, 6000);
  EXPECT_DOUBLE_EQ(r.op.pct, 100.0);
}

TEST_F(CompareTest, NcuRowsAreComparedPerPair) {
  const std::string a = write("a.db", p);
  const std::string b = write("b.db", p);
  // ncu rows 0 and 1 measured k0 and k2; B swaps them and leaves row 2 (k1) unmatched.
  edit(b,
       "UPDATE ncu_rows SET matched_kernel_id = CASE row WHEN 0 THEN 2 WHEN 1 THEN 0 ELSE NULL END "
       "WHERE row IN (0, 1, 2);");
  const ProfileComparison c = compare_files(a, b);
  EXPECT_EQ(c.a.ncu_matched, 3u);
  EXPECT_EQ(c.b.ncu_matched, 2u);
  EXPECT_EQ(c.ncu_both_matched, 2u);
  EXPECT_EQ(c.ncu_same_row, 0u);
  EXPECT_EQ(c.ncu_only_a, 1u);
  EXPECT_EQ(c.ncu_only_b, 0u);
  EXPECT_EQ(c.ncu_differences_total, 3u);
  ASSERT_EQ(c.ncu_differences.size(), 3u);
  EXPECT_EQ(c.ncu_differences[0].id_a, 0);
  EXPECT_EQ(c.ncu_differences[0].row_a, 0);
  EXPECT_EQ(c.ncu_differences[0].row_b, 1);
  EXPECT_EQ(c.ncu_differences[1].id_a, 1);
  EXPECT_EQ(c.ncu_differences[1].row_b, -1);
  EXPECT_DOUBLE_EQ(c.op.pct, 100.0);  // attribution is unchanged

  // Profiles without ncu: no counters in the aggregates either.
  for (auto* groups : {&p.agg.operators, &p.agg.modules, &p.agg.families})
    for (GroupStats& g : *groups) g.metric.clear();
  p.cov.has_ncu = false;
  const ProfileComparison none = compare_files(write("x.db", p, false), write("y.db", p, false));
  EXPECT_FALSE(none.a.has_ncu);
  EXPECT_EQ(none.ncu_both_matched, 0u);
  EXPECT_NE(render_comparison_text(none).find("ncu: neither profile has ncu counters"), std::string::npos);
}

TEST_F(CompareTest, JsonCarriesTheFigures) {
  const std::string a = write("a.db", p);
  p.attr.op[2] = p.tl.strings.intern("aten::addmm");
  const std::string b = write("b.db", p);
  const std::string json = render_comparison_json(compare_files(a, b));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(std::string(doc["a"]["path"].get_string().value()), a);
  EXPECT_EQ(doc["a"]["kernels"].get_uint64().value(), 6u);
  EXPECT_EQ(doc["aligned"].get_uint64().value(), 6u);
  EXPECT_EQ(std::string(doc["activity"].get_string().value()), "kernel");
  EXPECT_DOUBLE_EQ(doc["agreement"]["operator"]["pct"].get_double().value(), share_pct(4000, 6000));
  EXPECT_EQ(doc["agreement"]["operator"]["time_ns"].get_int64().value(), 4000);
  EXPECT_EQ(doc["ncu"]["same_row"].get_uint64().value(), 3u);
  simdjson::dom::array top = doc["disagreements"]["top"].get_array().value();
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(std::string(top.at(0)["op_b"].get_string().value()), "aten::addmm");
  EXPECT_TRUE(top.at(0)["module_a"].is_string());
}

TEST_F(CompareTest, EmptyProfilesHaveNoAgreementFigure) {
  // A profile whose only activity is the memcpy: no kernels to compare.
  const std::string a = write("a.db", p);
  edit(a, "DELETE FROM kernels WHERE kind = 'kernel';");
  const ProfileComparison c = compare_files(a, a);
  EXPECT_EQ(c.aligned, 0u);
  EXPECT_TRUE(std::isnan(c.op.pct));
  EXPECT_NE(render_comparison_text(c).find("operator                  -"), std::string::npos)
      << render_comparison_text(c);
  EXPECT_NE(render_comparison_json(c).find("\"pct\": null"), std::string::npos);
}

// The real gpt2_eager capture (torch.profiler trace + ncu CSV) attributed twice by the CLI.
class CompareRealProfile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    const std::string fixtures = OPPROF_FIXTURES_DIR;
    for (const char* name : {"a.db", "b.db"}) {
      const std::string cmd = std::string(OPPROF_CLI_PATH) + " attribute -q --trace " + fixtures +
                              "/gpt2_eager/trace.json.gz --ncu " + fixtures + "/gpt2_eager/ncu.csv.gz -o " +
                              dir_->file(name);
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
  }
  static void TearDownTestSuite() { dir_.reset(); }
  static std::string a() { return dir_->file("a.db"); }
  static std::string b() { return dir_->file("b.db"); }
  // A copy of b.db to edit.
  static std::string copy_of_b(const std::string& name) {
    std::filesystem::copy_file(b(), dir_->file(name), std::filesystem::copy_options::overwrite_existing);
    return dir_->file(name);
  }
  static inline std::unique_ptr<TempDir> dir_;
};

TEST_F(CompareRealProfile, AttributedTwiceAgreesFully) {
  const ProfileComparison c = compare_files(a(), b());
  const auto kernels = static_cast<std::size_t>(query_int(a(), "SELECT count(*) FROM kernels WHERE kind = 'kernel'"));
  ASSERT_GT(kernels, 100u);
  EXPECT_EQ(c.a.kernels, kernels);
  EXPECT_EQ(c.aligned, kernels);
  EXPECT_EQ(c.aligned_ns_a, query_int(a(), "SELECT sum(duration_ns) FROM kernels WHERE kind = 'kernel'"));
  EXPECT_DOUBLE_EQ(c.op.pct, 100.0);
  EXPECT_DOUBLE_EQ(c.top_op.pct, 100.0);
  EXPECT_DOUBLE_EQ(c.module.pct, 100.0);
  EXPECT_EQ(c.a.ncu_matched, kernels);
  EXPECT_EQ(c.ncu_same_row, kernels);
  EXPECT_EQ(c.disagreeing_pairs, 0u);
}

TEST_F(CompareRealProfile, OneChangedOperatorDropsAgreementByExactlyItsTimeShare) {
  const std::string changed = copy_of_b("changed.db");
  // The longest kernel's operator.
  const std::string longest = "(SELECT id FROM kernels WHERE kind = 'kernel' ORDER BY duration_ns DESC, id LIMIT 1)";
  edit(changed, intern_sql("aten::changed") + "UPDATE attribution_rows SET op_id = " + string_id_sql("aten::changed") +
                    " WHERE kernel_id = " + longest + ";");
  const std::int64_t d = query_int(a(), "SELECT duration_ns FROM kernels WHERE id = " + longest);
  const ProfileComparison c = compare_files(a(), changed);
  EXPECT_EQ(c.op.pairs, c.aligned - 1);
  EXPECT_EQ(c.op.time_ns, c.aligned_ns_a - d);
  EXPECT_DOUBLE_EQ(c.op.pct, share_pct(c.aligned_ns_a - d, c.aligned_ns_a));
  EXPECT_DOUBLE_EQ(c.top_op.pct, 100.0);
  EXPECT_DOUBLE_EQ(c.module.pct, 100.0);
  ASSERT_EQ(c.disagreements.size(), 1u);
  EXPECT_EQ(c.disagreements[0].op_b, "aten::changed");
  EXPECT_EQ(c.disagreements[0].time_ns, d);
}

TEST_F(CompareRealProfile, ToleratesAnExtraKernelInB) {
  const std::string extra = copy_of_b("extra.db");
  // A kernel of its own name right after the 50th, attributed elsewhere.
  const std::string k50 = "(SELECT id FROM kernels WHERE kind = 'kernel' ORDER BY start_ns, id LIMIT 1 OFFSET 49)";
  edit(extra,
       "INSERT INTO kernel_names (id, name) VALUES (1000000, 'void opprof_test_extra<float>(float*)');"
       "INSERT INTO kernels SELECT 1000000, kind, 1000000, pid, device, context, stream, end_ns + 1, end_ns + 501, "
       "500, grid_x, grid_y, grid_z, block_x, block_y, block_z, NULL, NULL, NULL, NULL, registers_per_thread, "
       "shared_mem_bytes, bytes, rank FROM kernels WHERE id = " + k50 + ";" +
       intern_sql("enclosure") + intern_sql("aten::extra") + intern_sql("extra") + intern_sql("thread_range") +
       "INSERT INTO attribution_rows (kernel_id, path_id, confidence, op_id, module_id, module_source_id, opaque, "
       "phase_id) VALUES (1000000, " + string_id_sql("enclosure") + ", 0.5, " + string_id_sql("aten::extra") + ", " +
       string_id_sql("extra") + ", " + string_id_sql("thread_range") + ", 0, " + string_id_sql("forward") + ");");
  const ProfileComparison c = compare_files(a(), extra);
  EXPECT_EQ(c.b.kernels, c.a.kernels + 1);
  EXPECT_EQ(c.aligned, c.a.kernels);
  EXPECT_EQ(c.a.unaligned, 0u);
  EXPECT_EQ(c.b.unaligned, 1u);
  EXPECT_EQ(c.b.unaligned_ns, 500);
  ASSERT_EQ(c.b.unaligned_names.size(), 1u);
  EXPECT_EQ(c.b.unaligned_names[0].kernel, "opprof_test_extra");
  EXPECT_DOUBLE_EQ(c.op.pct, 100.0);
  EXPECT_DOUBLE_EQ(c.module.pct, 100.0);
  EXPECT_EQ(c.ncu_same_row, c.a.kernels);
  EXPECT_EQ(c.disagreeing_pairs, 0u);
}

TEST(CompareErrors, NotAProfileIsAnInputError) {
  TempDir dir;
  std::ofstream(dir.file("text.db")) << "not a database\n";
  EXPECT_THROW(compare_files(dir.file("text.db"), dir.file("text.db")), InputError);
  EXPECT_THROW(compare_files(dir.file("missing.db"), dir.file("text.db")), InputError);
}
