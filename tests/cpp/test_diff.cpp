// `opprof diff` on the committed eager and compiled GPT-2 captures: the figures it prints are checked
// against SQL over the two databases (kernel time per operator, per module subtree, per family), not
// against its own output; the CLI's JSON, --fail-if-slower and the warnings for profiles that do not compare.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "opprof/pipeline/attribute.hpp"
#include "opprof/pipeline/attribute_job.hpp"
#include "opprof/report/diff_report.hpp"
#include "opprof/report/text_layout.hpp"
#include "opprof/report/units.hpp"
#include "opprof/util/text.hpp"
#include "profile_fixture.hpp"
#include "cli_harness.hpp"

using namespace opprof;
using namespace opprof::testing;

namespace {

using opprof::test::fixture;

// One integer from SQL over a database, with another attached as "o" when given.
std::int64_t sql_int(const std::string& db, const std::string& sql, const std::string& other = "") {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  if (!other.empty()) {
    EXPECT_EQ(sqlite3_exec(h, ("ATTACH '" + other + "' AS o").c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  }
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(h, sql.c_str(), -1, &q, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  std::int64_t v = -1;
  if (sqlite3_step(q) == SQLITE_ROW) v = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(h);
  return v;
}

std::int64_t kernel_time(const std::string& db, const std::string& where = "1") {
  return sql_int(db, "SELECT COALESCE(SUM(duration_ns), 0) FROM kernel_view WHERE kind = 'kernel' AND (" + where + ")");
}

struct Result {
  int status = -1;
  std::string out;  // stdout only
};

Result run_cli(const std::string& args) {
  Result r;
  FILE* p = popen((std::string(OPPROF_CLI_PATH) + " " + args + " 2>/dev/null").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int raw = pclose(p);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

const DiffRow* row(const std::vector<DiffRow>& rows, const std::string& key) {
  for (const DiffRow& r : rows)
    if (r.key == key) return &r;
  return nullptr;
}

class Gpt2Profiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    for (const char* name : {"gpt2_eager", "gpt2_compiled"}) {
      AttributeRequest r;
      r.trace = fixture(std::string(name) + "/trace.json.gz");
      r.ncu = fixture(std::string(name) + "/ncu.csv.gz");
      if (std::string(name) == "gpt2_compiled") r.inductor = fixture("gpt2_compiled/inductor");
      r.output = dir_->file(std::string(name) + ".db");  // attribute_capture writes it
      attribute_capture(r);
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string eager() { return dir_->file("gpt2_eager.db"); }
  static std::string compiled() { return dir_->file("gpt2_compiled.db"); }
  static TempDir* dir_;
};
TempDir* Gpt2Profiles::dir_ = nullptr;

}  // namespace

TEST_F(Gpt2Profiles, TotalOperatorAndModuleTimesAreTheDatabasesOwn) {
  const ProfileDiff d = diff_profiles(ProfileReader(eager()), ProfileReader(compiled()));
  const std::int64_t base_ns = kernel_time(eager()), new_ns = kernel_time(compiled());
  EXPECT_EQ(d.base.kernel_time_ns, base_ns);
  EXPECT_EQ(d.next.kernel_time_ns, new_ns);
  EXPECT_DOUBLE_EQ(d.speedup(), static_cast<double>(base_ns) / static_cast<double>(new_ns));
  EXPECT_GT(d.speedup(), 1.0);  // compiling made the step faster
  EXPECT_TRUE(d.warnings.empty()) << d.warnings.front();

  // Operators: time per operator, summed over the kernels.
  for (const char* op : {"aten::mm", "aten::addmm"}) {
    const DiffRow* r = row(d.operators, op);
    ASSERT_NE(r, nullptr) << op;
    EXPECT_EQ(r->base_ns, kernel_time(eager(), std::string("op = '") + op + "'")) << op;
    EXPECT_EQ(r->new_ns, kernel_time(compiled(), std::string("op = '") + op + "'")) << op;
    EXPECT_EQ(r->base_kernels, static_cast<std::uint64_t>(sql_int(
                                   eager(), std::string("SELECT COUNT(*) FROM kernel_view WHERE kind = 'kernel' AND op = '") +
                                                op + "'")));
  }
  // Triton kernels exist only compiled: added.
  bool some_added = false;
  for (const DiffRow& r : d.operators) some_added |= !r.in_base && r.in_new && starts_with(r.key, "triton_");
  EXPECT_TRUE(some_added);

  // Modules: inclusive time of a path is the time of the kernels in its subtree.
  for (const char* path : {"transformer", "transformer.h", "transformer.h.3", "transformer.h.3.mlp", "lm_head"}) {
    const DiffRow* r = row(d.modules, path);
    ASSERT_NE(r, nullptr) << path;
    const std::string subtree = std::string("module = '") + path + "' OR module LIKE '" + path + ".%'";
    EXPECT_EQ(r->base_ns, kernel_time(eager(), subtree)) << path;
    EXPECT_EQ(r->new_ns, kernel_time(compiled(), subtree)) << path;
    EXPECT_GT(r->base_ns, 0) << path;
    EXPECT_GT(r->new_ns, 0) << path;
  }
  // Families: one in the compiled profile only is added, and its time is the database's.
  std::size_t added = 0, removed = 0;
  for (const DiffRow& r : d.families) {
    added += !r.in_base;
    removed += !r.in_new;
    if (!r.in_base) {
      EXPECT_EQ(r.new_ns, kernel_time(compiled(), "family = '" + r.key + "'")) << r.key;
    }
  }
  EXPECT_EQ(static_cast<std::int64_t>(added),
            sql_int(compiled(), "SELECT COUNT(*) FROM kernel_families WHERE key NOT IN (SELECT key FROM o.kernel_families)",
                    eager()));
  EXPECT_EQ(static_cast<std::int64_t>(removed),
            sql_int(eager(), "SELECT COUNT(*) FROM kernel_families WHERE key NOT IN (SELECT key FROM o.kernel_families)",
                    compiled()));
  EXPECT_GT(added, 0u);
  EXPECT_GT(removed, 0u);
  // Counters: operators in both, largest score first.
  ASSERT_FALSE(d.counters.empty());
  for (std::size_t i = 1; i < d.counters.size(); ++i) EXPECT_GE(d.counters[i - 1].score, d.counters[i].score);
}

TEST_F(Gpt2Profiles, TextFitsAndShowsSpeedupsAndTheTotal) {
  const ProfileDiff d = diff_profiles(ProfileReader(eager()), ProfileReader(compiled()));
  const std::string text = render_diff_text(d);
  EXPECT_TRUE(contains(text, "Kernel time ")) << text;
  EXPECT_TRUE(contains(text, format_speedup(d.speedup()) + " faster")) << text;
  EXPECT_TRUE(contains(text, "Operators (")) << text;
  EXPECT_TRUE(contains(text, "Modules, inclusive time, 3 levels (")) << text;
  EXPECT_TRUE(contains(text, "Kernel families added (only in the new profile): ")) << text;
  EXPECT_TRUE(contains(text, "Kernel families removed (only in the base profile): ")) << text;
  EXPECT_TRUE(contains(text, "Counters that changed most")) << text;
  const DiffRow* mm = row(d.operators, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_TRUE(contains(text, format_speedup(mm->speedup()))) << text;
  for (std::string_view line : split_lines(text)) EXPECT_LE(display_width(line), 100u) << line;
}

TEST_F(Gpt2Profiles, CliJsonAndFailIfSlower) {
  const Result j = run_cli("diff --json " + eager() + " " + compiled());
  ASSERT_EQ(j.status, 0) << j.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(j.out).get(doc), simdjson::SUCCESS) << j.out;
  EXPECT_EQ(doc["format"].get_string().value(), "opprof-diff");
  EXPECT_EQ(doc["base"]["kernel_time_ns"].get_int64().value(), kernel_time(eager()));
  EXPECT_EQ(doc["new"]["kernel_time_ns"].get_int64().value(), kernel_time(compiled()));
  EXPECT_NEAR(doc["speedup"].get_double().value(),
              static_cast<double>(kernel_time(eager())) / static_cast<double>(kernel_time(compiled())), 1e-12);
  EXPECT_TRUE(doc["operators"].at(0)["in_base"].is_bool());
  // Every operator of either profile is a row.
  EXPECT_EQ(static_cast<std::int64_t>(doc["operators"].get_array().value().size()),
            sql_int(eager(), "SELECT COUNT(*) FROM (SELECT key FROM operators UNION SELECT key FROM o.operators)",
                    compiled()));
  // The new profile faster: no failure at 0 %; the other way round slower by far more than 5 %.
  EXPECT_EQ(run_cli("diff --fail-if-slower 0 " + eager() + " " + compiled()).status, 0);
  EXPECT_EQ(run_cli("diff --fail-if-slower 5 " + compiled() + " " + eager()).status, 1);
  EXPECT_EQ(run_cli("diff --fail-if-slower 1000 " + compiled() + " " + eager()).status, 0);
  EXPECT_EQ(run_cli("diff --fail-if-slower -1 " + compiled() + " " + eager()).status, 2);
  EXPECT_EQ(run_cli("diff " + eager() + " " + dir_->file("missing.db")).status, 2);
}

namespace {

// Checks inclusive = self + children below a JSON tree node; returns its inclusive time.
std::int64_t check_tree_node(simdjson::dom::element node) {
  std::int64_t children = 0;
  const simdjson::dom::array kids = node["children"].get_array().value();  // named: a range-for over the
  for (simdjson::dom::element c : kids) children += check_tree_node(c);    // temporary would dangle
  const std::int64_t inclusive = node["inclusive_ns"].get_int64().value();
  EXPECT_EQ(inclusive, node["self_ns"].get_int64().value() + children) << node["path"].get_string().value();
  return inclusive;
}

}  // namespace

TEST_F(Gpt2Profiles, ReportJsonIsTypedWithEveryRowAndTheModuleTree) {
  const Result j = run_cli("report --json " + compiled());
  ASSERT_EQ(j.status, 0);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(j.out).get(doc), simdjson::SUCCESS) << j.out;
  EXPECT_EQ(doc["format"].get_string().value(), "opprof-report");
  EXPECT_EQ(doc["format_version"].get_int64().value(), 2);
  // Metadata typed: the capture's facts as booleans and numbers, versions and names as strings.
  simdjson::dom::object meta = doc["metadata"].get_object().value();
  // (`attribute --trace` reads no capture.json, so this fixture's metadata has no capture.* facts.)
  EXPECT_TRUE(meta["timing.read_s"].is_number());
  EXPECT_TRUE(meta["chip"].is_string());
  EXPECT_TRUE(meta["schema_version"].is_int64());
  EXPECT_TRUE(meta["opprof_version"].is_string());
  EXPECT_TRUE(meta["timeline.device.0.name"].is_string());
  // Every operator without --top; fused_ops a list.
  simdjson::dom::array ops = doc["operators"].get_array().value();
  EXPECT_EQ(static_cast<std::int64_t>(ops.size()), doc["operator_count"].get_int64().value());
  EXPECT_EQ(static_cast<std::int64_t>(ops.size()), sql_int(compiled(), "SELECT COUNT(*) FROM operators"));
  bool fused = false;
  for (simdjson::dom::element op : ops) {
    ASSERT_TRUE(op["fused_ops"].is_array());
    fused |= op["fused_ops"].get_array().value().size() > 1;
    EXPECT_TRUE(op["kernels"].is_int64());
  }
  EXPECT_TRUE(fused);
  // The tree: inclusive = self + children everywhere, and the roots with the remainder make all kernel time.
  simdjson::dom::object tree = doc["module_tree"].get_object().value();
  std::int64_t roots = 0;
  const simdjson::dom::array root_nodes = tree["roots"].get_array().value();
  for (simdjson::dom::element root : root_nodes) roots += check_tree_node(root);
  EXPECT_EQ(roots, tree["module_ns"].get_int64().value());
  EXPECT_EQ(roots + tree["no_module_ns"].get_int64().value(), doc["kernel_time_ns"].get_int64().value());
  EXPECT_EQ(tree["module_ns"].get_int64().value(), kernel_time(compiled(), "module IS NOT NULL"));
  // --top limits.
  const Result top = run_cli("report --json --top 2 " + compiled());
  ASSERT_EQ(parser.parse(top.out).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(doc["operators"].get_array().value().size(), 2u);
}

TEST_F(Gpt2Profiles, ReportOptionsAreCheckedAndWidthHeld) {
  EXPECT_EQ(run_cli("report --top -5 " + eager()).status, 2);
  EXPECT_EQ(run_cli("report --width 10 " + eager()).status, 2);
  EXPECT_EQ(run_cli("report --by kernel " + eager()).status, 2);
  EXPECT_EQ(run_cli("report --color sometimes " + eager()).status, 2);
  const Result narrow = run_cli("report --width 72 --top 0 --depth 0 " + compiled());
  ASSERT_EQ(narrow.status, 0);
  for (std::string_view line : split_lines(narrow.out)) EXPECT_LE(display_width(line), 72u) << line;
  // Not a terminal: no colour unless asked, and NO_COLOR does not override an explicit always.
  EXPECT_EQ(narrow.out.find('\x1b'), std::string::npos);
  EXPECT_NE(run_cli("report --color always " + eager()).out.find("\x1b[1m"), std::string::npos);
  EXPECT_EQ(run_cli("report --color auto " + eager()).out.find('\x1b'), std::string::npos);
}

TEST_F(Gpt2Profiles, CompareKeepsItsOldNameWithANote) {
  FILE* p = popen((std::string(OPPROF_CLI_PATH) + " compare " + eager() + " " + eager() + " 2>&1 >/dev/null").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string err;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) err.append(buf.data(), n);
  EXPECT_EQ(WEXITSTATUS(pclose(p)), 0);
  EXPECT_NE(err.find("`opprof compare` is now `opprof compare-attribution`"), std::string::npos) << err;
  const Result renamed = run_cli("compare-attribution " + eager() + " " + eager());
  EXPECT_EQ(renamed.status, 0);
  EXPECT_NE(renamed.out.find("opprof compare-attribution: kernels aligned"), std::string::npos) << renamed.out;
}

namespace {

// The profile of a committed job capture (tests/fixtures/multiproc/README.md).
std::string attribute_job_fixture(const TempDir& dir, const std::string& job_dir, const std::string& name) {
  JobRequest request;
  request.dir = job_dir;
  request.request.output = dir.file(name);
  (void)attribute_job(request);
  return request.request.output;
}

std::int64_t rank_sql(const std::string& db, const std::string& what, int rank) {
  return sql_int(db, what + " AND rank = " + std::to_string(rank));
}

}  // namespace

// Two jobs (the 12-block and the 1-block GPT-2 DDP steps over gloo, two ranks each) compared rank by rank: each
// rank's figures and each operator's time on each rank are the databases' own rank_summary and rank_groups.
TEST(DiffJobs, TwoJobsAreComparedRankByRank) {
  TempDir dir;
  const std::string base = attribute_job_fixture(dir, fixture("multiproc/gpt2"), "gpt2.db");
  const std::string next = attribute_job_fixture(dir, fixture("multiproc/gpt2_l1_comm"), "l1.db");
  const ProfileDiff d = diff_profiles(ProfileReader(base), ProfileReader(next));
  EXPECT_TRUE(d.warnings.empty()) << d.warnings.front();
  ASSERT_EQ(d.ranks.size(), 2u);  // torchrun's idle process is no rank
  for (int rank = 0; rank < 2; ++rank) {
    const RankDiff& r = d.ranks[rank];
    EXPECT_EQ(r.label, "rank " + std::to_string(rank));
    EXPECT_TRUE(r.in_base && r.in_new);
    EXPECT_EQ(r.base_status, "ok");
    EXPECT_EQ(r.base.kernel_time_ns, rank_sql(base, "SELECT kernel_time_ns FROM rank_summary WHERE 1", rank));
    EXPECT_EQ(r.next.kernel_time_ns, rank_sql(next, "SELECT kernel_time_ns FROM rank_summary WHERE 1", rank));
    EXPECT_EQ(r.base.communication_ns, rank_sql(base, "SELECT communication_ns FROM rank_summary WHERE 1", rank));
    EXPECT_EQ(r.next.cpu_communication_ns, rank_sql(next, "SELECT cpu_communication_ns FROM rank_summary WHERE 1", rank));
    EXPECT_DOUBLE_EQ(r.speedup(), double(r.base.kernel_time_ns) / double(r.next.kernel_time_ns));
    // The rank's operator rows hold all of its operators' time on either side.
    std::int64_t base_ns = 0, new_ns = 0;
    for (const RankOperatorDiff& o : d.rank_operators) {
      if (o.rank != r.label) continue;
      base_ns += o.row.base_ns;
      new_ns += o.row.new_ns;
    }
    const std::string operators = "SELECT SUM(time_ns) FROM rank_groups WHERE group_kind = 'operator'";
    EXPECT_EQ(base_ns, rank_sql(base, operators, rank));
    EXPECT_EQ(new_ns, rank_sql(next, operators, rank));
  }
  // AdamW's division differs most between the 12-block job's ranks; each rank's row is its own.
  for (const RankOperatorDiff& o : d.rank_operators) {
    if (o.row.key != "aten::_foreach_div_") continue;
    const int rank = o.rank == "rank 0" ? 0 : 1;
    EXPECT_EQ(o.row.base_ns,
              rank_sql(base, "SELECT time_ns FROM rank_groups WHERE key = 'aten::_foreach_div_' AND group_kind = 'operator'", rank));
  }
  for (std::size_t i = 1; i < d.rank_operators.size(); ++i) {
    const DiffRow &a = d.rank_operators[i - 1].row, &b = d.rank_operators[i].row;
    EXPECT_GE(std::llabs(a.new_ns - a.base_ns), std::llabs(b.new_ns - b.base_ns));
  }

  DiffTextOptions wide;
  wide.width = 160;
  const std::string text = render_diff_text(d, wide);
  EXPECT_NE(text.find("Ranks (2): kernel time"), std::string::npos) << text;
  EXPECT_NE(text.find("Operators per rank whose time changed most"), std::string::npos) << text;
  EXPECT_NE(text.find(format_duration_ns(d.ranks[1].base.kernel_time_ns)), std::string::npos) << text;

  const Result cli = run_cli("diff --json " + base + " " + next);
  ASSERT_EQ(cli.status, 0);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(cli.out);
  simdjson::dom::array ranks = doc["ranks"].get_array();
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(std::string_view(ranks.at(1)["rank"].get_string()), "rank 1");
  EXPECT_EQ(std::int64_t(ranks.at(1)["base"]["kernel_time_ns"].get_int64()), d.ranks[1].base.kernel_time_ns);
  EXPECT_EQ(doc["rank_operators"].get_array().size(), d.rank_operators.size());
}

// A job against a job with a rank fewer, and against a single-process profile: what does not compare is said.
TEST(DiffJobs, MissingRanksAndASingleProcessAreWarnedAbout) {
  TempDir dir;
  const std::string two = attribute_job_fixture(dir, fixture("multiproc/gpt2_l1_comm"), "two.db");
  const std::filesystem::path one_rank = dir.file("one_rank");
  std::filesystem::create_directories(one_rank);
  std::filesystem::copy(fixture("multiproc/gpt2_l1_comm/rank0"), one_rank / "rank0");
  const std::string one = attribute_job_fixture(dir, one_rank.string(), "one.db");
  const ProfileDiff d = diff_profiles(ProfileReader(two), ProfileReader(one));
  // The capture records say the world had 2 ranks: rank 1 is there, missing its log.
  ASSERT_EQ(d.ranks.size(), 2u);
  EXPECT_TRUE(d.ranks[1].in_base && d.ranks[1].in_new);
  EXPECT_EQ(d.ranks[1].new_status, "missing");
  EXPECT_EQ(d.ranks[1].next.kernel_time_ns, 0);
  EXPECT_TRUE(std::isnan(d.ranks[1].speedup()));
  EXPECT_EQ(d.ranks[0].base.kernel_time_ns, d.ranks[0].next.kernel_time_ns);  // the same log
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_EQ(d.warnings[0], "Some ranks' captures differ in state (rank 1 ok -> missing): their times compare only "
                           "as far as both were attributed.");
  DiffTextOptions wide;
  wide.width = 160;
  EXPECT_NE(render_diff_text(d, wide).find("ok→missing"), std::string::npos) << render_diff_text(d, wide);
  // Reversed, and with rank 1's folder gone from the records too: a rank of one side only.
  const ProfileDiff reversed = diff_profiles(ProfileReader(one), ProfileReader(two));
  EXPECT_EQ(reversed.ranks[1].base_status, "missing");

  AttributeRequest single;
  single.trace = fixture("kineto/mlp_compiled.kineto.json");
  single.output = dir.file("single.db");
  attribute_capture(single);
  const ProfileDiff s = diff_profiles(ProfileReader(single.output), ProfileReader(two));
  EXPECT_TRUE(s.ranks.empty());
  EXPECT_TRUE(s.rank_operators.empty());
  ASSERT_FALSE(s.warnings.empty());
  EXPECT_EQ(s.warnings.back(), "Only the new profile is a multi-process job: ranks are not compared.");
}
