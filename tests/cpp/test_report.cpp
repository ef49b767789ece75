// Reports read only the profile database: the JSON summary (checked by parsing it with simdjson, an
// independent JSON parser), the JSON string escaper, and the terminal report's content.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <string>

#include "opprof/report/json.hpp"
#include "opprof/report/json_writer.hpp"
#include "opprof/report/terminal.hpp"
#include "opprof/store/profile_db.hpp"
#include "opprof/store/profile_reader.hpp"
#include "profile_fixture.hpp"

using namespace opprof;
using namespace opprof::testing;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override { build_test_profile(p); }
  // Writes the profile and opens it, as the CLI does.
  ProfileReader write_and_open(bool with_ncu = true) {
    std::string path = dir.file("profile.db");
    write_profile_db(path, p.inputs(with_ncu));
    return ProfileReader(path);
  }
  TestProfile p;
  TempDir dir;
  simdjson::dom::parser parser;
};

// ---- JSON string escaping -------------------------------------------------------------------------

TEST(JsonEscape, QuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_quote("plain"), "\"plain\"");
  EXPECT_EQ(json_quote("a\"b\\c/d"), R"("a\"b\\c/d")");
  EXPECT_EQ(json_quote("\n\r\t\b\f"), R"("\n\r\t\b\f")");
  EXPECT_EQ(json_quote(std::string_view("\x01\x1f\x7f", 3)), "\"\\u0001\\u001f\x7f\"");
  EXPECT_EQ(json_quote(std::string_view("a\0b", 3)), R"("a\u0000b")");
  EXPECT_EQ(json_quote(""), "\"\"");
}

TEST(JsonEscape, ValidUtf8PassesAndInvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(json_quote("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  EXPECT_EQ(json_quote("\xff"), R"("\ufffd")");                        // never valid in UTF-8
  EXPECT_EQ(json_quote("a\xc3"), R"("a\ufffd")");                      // truncated sequence
  EXPECT_EQ(json_quote("\xc0\xaf"), R"("\ufffd\ufffd")");              // overlong '/'
  EXPECT_EQ(json_quote("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")");    // UTF-16 surrogate
  EXPECT_EQ(json_quote("\xf4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");  // beyond U+10FFFF
  EXPECT_EQ(json_quote("Latin-1 \xe9t\xe9"), R"("Latin-1 \ufffdt\ufffd")");
}

TEST(JsonEscape, EveryByteValueMakesAParsableString) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  std::string doc = "[" + json_quote(all) + "]";
  simdjson::dom::parser parser;
  simdjson::dom::element parsed;
  ASSERT_EQ(parser.parse(doc).get(parsed), simdjson::SUCCESS) << doc;
  std::string_view back = parsed.at(0).get_string().value();
  EXPECT_EQ(back.substr(0, 128), std::string_view(all).substr(0, 128));  // ASCII comes back unchanged
}

TEST(JsonWriter, NestingCommasAndNull) {
  JsonWriter compact(0);
  compact.begin_object()
      .key("a")
      .begin_array()
      .integer(1)
      .number(2.5)
      .number(std::nan(""))
      .boolean(true)
      .null()
      .end_array()
      .key("b")
      .begin_object()
      .end_object()
      .key("c")
      .begin_array()
      .end_array()
      .key("d\"")
      .string("x\n")
      .key("e")
      .unsigned_integer(18446744073709551615ull)
      .key("f")
      .number(-1e300)
      .end_object();
  EXPECT_EQ(compact.str(),
            R"({"a":[1,2.5,null,true,null],"b":{},"c":[],"d\"":"x\n","e":18446744073709551615,"f":-1e+300})");

  JsonWriter pretty(2);
  pretty.begin_object().key("k").begin_array().integer(1).end_array().end_object();
  EXPECT_EQ(pretty.str(), "{\n  \"k\": [\n    1\n  ]\n}");
}

TEST(JsonWriter, MisuseIsALogicError) {
  JsonWriter a;
  a.begin_object();
  EXPECT_THROW(a.integer(1), std::logic_error);  // a value without a key
  EXPECT_THROW(a.str(), std::logic_error);       // unfinished document
  JsonWriter b;
  b.begin_array();
  EXPECT_THROW(b.key("x"), std::logic_error);
  EXPECT_THROW(b.end_object(), std::logic_error);
}

// ---- JSON report -----------------------------------------------------------------------------------

TEST_F(ReportTest, JsonHasCoverageByPathAndUnattributed) {
  ProfileReader r = write_and_open();
  std::string json = render_json_report(r);
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;

  EXPECT_EQ(doc["schema_version"].get_int64().value(), kProfileSchemaVersion);
  EXPECT_EQ(doc["profile"].get_string().value(), dir.file("profile.db"));
  EXPECT_EQ(doc["kernel_time_ns"].get_int64().value(), 6000);
  EXPECT_EQ(doc["kernels"].get_int64().value(), 6);
  EXPECT_DOUBLE_EQ(doc["attributed_pct"].get_double().value(), 95.0);
  EXPECT_DOUBLE_EQ(doc["module_attributed_pct"].get_double().value(), 75.0);
  EXPECT_NEAR(doc["opaque_backend_pct"].get_double().value(), 100.0 / 6.0, 1e-9);

  simdjson::dom::object by_path = doc["by_path"].get_object().value();
  EXPECT_NEAR(by_path["correlation"].get_double().value(), 5000.0 / 60.0, 1e-9);
  EXPECT_NEAR(by_path["enclosure"].get_double().value(), 200.0 / 60.0, 1e-9);
  EXPECT_NEAR(by_path["fusion"].get_double().value(), 500.0 / 60.0, 1e-9);
  EXPECT_DOUBLE_EQ(by_path["none"].get_double().value(), 5.0);
  EXPECT_EQ(doc["by_path_ns"]["fusion"].get_int64().value(), 500);

  simdjson::dom::array unattributed = doc["unattributed"].get_array().value();
  ASSERT_EQ(unattributed.size(), 1u);
  EXPECT_EQ(unattributed.at(0)["family"].get_string().value(), "mystery_kernel");
  EXPECT_EQ(unattributed.at(0)["reason"].get_string().value(), "no launch and no enclosing range");
  EXPECT_EQ(unattributed.at(0)["time_ns"].get_int64().value(), 300);
  EXPECT_EQ(unattributed.at(0)["kernels"].get_int64().value(), 1);

  simdjson::dom::array backends = doc["opaque_backends"].get_array().value();
  ASSERT_EQ(backends.size(), 1u);
  EXPECT_EQ(backends.at(0)["backend"].get_string().value(), "cuDNN RNN");
  EXPECT_EQ(backends.at(0)["time_ns"].get_int64().value(), 1000);
}

TEST_F(ReportTest, JsonHasNcuCountsOperatorsModulesAndMetadata) {
  ProfileReader r = write_and_open();
  ReportOptions options;
  options.top = 3;
  std::string json = render_json_report(r, options);
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;

  simdjson::dom::object ncu = doc["ncu"].get_object().value();
  EXPECT_TRUE(ncu["available"].get_bool().value());
  EXPECT_EQ(ncu["rows"].get_int64().value(), 4);
  EXPECT_EQ(ncu["matched"].get_int64().value(), 3);
  EXPECT_EQ(ncu["unmatched_rows"].get_int64().value(), 1);
  EXPECT_EQ(ncu["unmatched_kernels"].get_int64().value(), 3);
  EXPECT_EQ(ncu["grid_block_disagreements"].get_int64().value(), 0);
  EXPECT_EQ(ncu["identity"].get_string().value(), "base_name_grid_block");
  EXPECT_EQ(ncu["missing_metrics"].at(0).get_string().value(), "lts__t_sector_hit_rate.pct");
  EXPECT_EQ(ncu["notes"].get_array().value().size(), 1u);

  simdjson::dom::array ops = doc["operators"].get_array().value();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(doc["operator_count"].get_int64().value(), 4);
  simdjson::dom::element mm = ops.at(0);
  EXPECT_EQ(mm["name"].get_string().value(), "aten::mm");
  EXPECT_EQ(mm["kernels"].get_int64().value(), 2);
  EXPECT_EQ(mm["time_ns"].get_int64().value(), 4000);
  EXPECT_NEAR(mm["time_pct"].get_double().value(), 4000.0 / 60.0, 1e-9);
  EXPECT_EQ(mm["bottleneck"].get_string().value(), "tensor pipe idle");
  EXPECT_DOUBLE_EQ(mm["sm_pct"].get_double().value(), 41.0);
  EXPECT_DOUBLE_EQ(mm["dram_pct"].get_double().value(), 31.0);
  EXPECT_DOUBLE_EQ(mm["tensor_pct"].get_double().value(), 0.0);
  EXPECT_DOUBLE_EQ(mm["occupancy_pct"].get_double().value(), 51.0);
  EXPECT_DOUBLE_EQ(mm["dram_gbps"].get_double().value(), 1200.5);
  EXPECT_EQ(mm["fused_ops"].get_array().value().size(), 0u);  // a list, empty for a plain operator
  // Unknown figures are null, not -1 or NaN.
  simdjson::dom::element rnn = ops.at(1);
  EXPECT_EQ(rnn["name"].get_string().value(), "aten::_cudnn_rnn");
  EXPECT_TRUE(rnn["sm_pct"].is_null());
  EXPECT_TRUE(rnn["dram_gbps"].is_null());
  EXPECT_TRUE(rnn["bottleneck"].is_null());
  simdjson::dom::element triton = ops.at(2);
  simdjson::dom::array fused = triton["fused_ops"].get_array().value();
  ASSERT_EQ(fused.size(), 2u);
  EXPECT_EQ(fused.at(0).get_string().value(), "aten::add");
  EXPECT_EQ(fused.at(1).get_string().value(), "aten::gelu");
  EXPECT_TRUE(triton["tensor_pct"].is_null());

  simdjson::dom::array modules = doc["modules"].get_array().value();
  ASSERT_EQ(modules.size(), 3u);
  EXPECT_EQ(modules.at(0)["name"].get_string().value(), "h.0.mlp.c_fc");
  EXPECT_EQ(doc["module_count"].get_int64().value(), 3);

  simdjson::dom::object meta = doc["metadata"].get_object().value();
  EXPECT_EQ(meta["timeline.device.0.name"].get_string().value(), "NVIDIA H200");
  EXPECT_EQ(meta["inputs.trace"].get_string().value(), "run/trace.json");

  simdjson::dom::array warnings = doc["warnings"].get_array().value();
  bool clocks = false;
  for (simdjson::dom::element w : warnings) clocks |= contains(std::string(w.get_string().value()), "not locked");
  EXPECT_TRUE(clocks) << json;
}

TEST_F(ReportTest, JsonEscapesWhatTheProfileHolds) {
  const std::string weird = "fam \"quoted\"\n\ttab \\ back \x01 \xff end";
  p.cov.unattributed[0].family = weird;
  p.metadata["note"] = "line1\nline2 \"q\"";
  ProfileReader r = write_and_open();
  std::string json = render_json_report(r);
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(doc["unattributed"].at(0)["family"].get_string().value(),
            "fam \"quoted\"\n\ttab \\ back \x01 \xef\xbf\xbd end");
  EXPECT_EQ(doc["metadata"]["note"].get_string().value(), "line1\nline2 \"q\"");
}

TEST_F(ReportTest, JsonWithoutNcu) {
  p.cov.has_ncu = false;
  p.cov.ncu_rows = p.cov.ncu_matched = p.cov.ncu_unmatched_rows = p.cov.ncu_unmatched_kernels = 0;
  for (auto* groups : {&p.agg.operators, &p.agg.modules, &p.agg.families})
    for (GroupStats& g : *groups) g.metric.clear();
  ProfileReader r = write_and_open(/*with_ncu=*/false);
  std::string json = render_json_report(r);
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_FALSE(doc["ncu"]["available"].get_bool().value());
  EXPECT_EQ(doc["ncu"]["rows"].get_int64().value(), 0);
  EXPECT_TRUE(doc["ncu"]["identity"].is_null());
  EXPECT_TRUE(doc["operators"].at(0)["sm_pct"].is_null());
}

TEST_F(ReportTest, AnEmptyProfileHasZeroPercentagesNotNaN) {
  TestProfile empty;
  std::string path = dir.file("empty.db");
  write_profile_db(path, empty.inputs(false));
  ProfileReader r(path);
  std::string json = render_json_report(r);
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(doc["kernel_time_ns"].get_int64().value(), 0);
  EXPECT_DOUBLE_EQ(doc["attributed_pct"].get_double().value(), 0.0);
  EXPECT_DOUBLE_EQ(doc["by_path"]["none"].get_double().value(), 0.0);
  EXPECT_EQ(doc["operators"].get_array().value().size(), 0u);
  std::string text = render_terminal_report(r);
  EXPECT_TRUE(contains(text, "Kernel time 0 ns in 0 kernels")) << text;
  EXPECT_TRUE(contains(text, "warning: The profile has no kernels")) << text;
  EXPECT_TRUE(contains(text, "Top operators: none in this profile")) << text;
}

TEST_F(ReportTest, KeyCounterFallsBackToTheAxisWhenAChipRenamesTheMetric) {
  // A chip-specific metric set replaces the HMMA tensor metric with another tensor-axis percentage.
  p.km.metrics[3].name = "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active";
  p.agg.operators[0].metric[3] = 62.5;
  ProfileReader r = write_and_open();
  std::string json = render_json_report(r);
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_DOUBLE_EQ(doc["operators"].at(0)["tensor_pct"].get_double().value(), 62.5);
}

// ---- terminal report -------------------------------------------------------------------------------

TEST_F(ReportTest, TerminalShowsCoverageOperatorsModulesAndUnattributed) {
  ProfileReader r = write_and_open();
  ReportOptions wide;  // wide enough for every column (at 100 the bandwidth and FLOP/s columns give way)
  wide.width = 160;
  std::string text = render_terminal_report(r, wide);
  for (const char* expected : {
           "opprof profile ",
           "written 2025-01-02T03:04:05Z by opprof",
           "capture: source kineto, GPU 0 NVIDIA H200",
           "inputs.trace: run/trace.json",
           "ncu: run/ncu.csv.gz",
           "Kernel time 6.00 µs in 6 kernels",
           "attributed to an operator    95.0%",
           "attributed to a module       75.0%",
           "inside opaque backends       16.7%  (cuDNN RNN 16.7%)",
           "by path: correlation 83.3%  enclosure 3.3%  fusion 8.3%  none 5.0%",
           "Top operators (4 of 4, by kernel time)",
           "aten::mm",
           "66.7%",
           "tensor pipe idle",
           "1.20 TB/s",
           "aten::_cudnn_rnn",
           "fuses aten::add, aten::gelu",
           "Module tree (3 of 3 modules, 3 levels; inclusive and self kernel time)",
           "    mlp ",
           "Unattributed kernel time 300 ns (5.0%) in 1 group",
           "mystery_kernel",
           "no launch and no enclosing range",
           "ncu: 4 rows, 3 matched to kernels (base name + grid + block)\n  1 row matched no kernel; 3 kernels without "
           "counters",
           "ncu row 3 (unknown_kernel) has no timeline kernel of that identity",
           "warning: GPU clocks were not locked",
           "warning: 1 ncu row(s) matched no timeline kernel",
           "warning: The ncu CSV lacks 1 metric(s) of the metric set: lts__t_sector_hit_rate.pct.",
       })
    EXPECT_TRUE(contains(text, expected)) << "missing: " << expected << "\n" << text;
  // The aten::mm row carries its key counters: SM 41%, DRAM 31%, tensor 0%, occupancy 51%.
  std::size_t row = text.find("  aten::mm ");
  ASSERT_NE(row, std::string::npos);
  std::string line = text.substr(row, text.find('\n', row) - row);
  for (const char* cell : {" 2 ", "4.00 µs", "66.7%", "41.0", "31.0", "0.0", "51.0", "1.20 TB/s"})
    EXPECT_TRUE(contains(line, cell)) << cell << " in: " << line;
}

TEST_F(ReportTest, TerminalLimitsListsAndSaysWhatIsLeftOut) {
  p.cov.unattributed.push_back({"other_kernel", "stream range missing", 2, 120});
  p.cov.unattributed.push_back({"third_kernel", "no launch", 1, 60});
  ReportOptions options;
  options.top = 1;
  options.unattributed = 1;
  ProfileReader r = write_and_open();
  std::string text = render_terminal_report(r, options);
  EXPECT_TRUE(contains(text, "Top operators (1 of 4, by kernel time)")) << text;
  EXPECT_FALSE(contains(text, "aten::_cudnn_rnn")) << text;
  EXPECT_TRUE(contains(text, "in 3 groups")) << text;
  EXPECT_TRUE(contains(text, "... 2 more groups, 180 ns (3.0%)")) << text;
  EXPECT_FALSE(contains(text, "other_kernel")) << text;
}

TEST_F(ReportTest, TerminalWithoutNcuAndWithLockedClocks) {
  p.tl.metadata["clocks_locked"] = "true";
  p.cov.has_ncu = false;
  for (auto* groups : {&p.agg.operators, &p.agg.modules, &p.agg.families})
    for (GroupStats& g : *groups) g.metric.clear();
  ProfileReader r = write_and_open(/*with_ncu=*/false);
  std::string text = render_terminal_report(r);
  EXPECT_TRUE(contains(text, "ncu: no counters in this profile")) << text;
  EXPECT_FALSE(contains(text, "warning:")) << text;
}

TEST_F(ReportTest, TerminalWarnsAboutNcuClockControlAndGridDisagreements) {
  p.metadata["ncu.clock_control"] = "none";
  p.cov.ncu_grid_block_disagreements = 2;
  ProfileReader r = write_and_open();
  std::string text = render_terminal_report(r);
  EXPECT_TRUE(contains(text, "warning: ncu replayed with --clock-control none")) << text;
  EXPECT_TRUE(contains(text, "warning: 2 matched ncu row(s) disagree with their kernel's grid or block")) << text;
}

TEST(TerminalFormat, DurationsAndWidths) {
  EXPECT_EQ(format_duration_ns(0), "0 ns");
  EXPECT_EQ(format_duration_ns(812), "812 ns");
  EXPECT_EQ(format_duration_ns(12345), "12.3 µs");
  EXPECT_EQ(format_duration_ns(4210000), "4.21 ms");
  EXPECT_EQ(format_duration_ns(1234000000), "1.23 s");
  EXPECT_EQ(fit_width("aten::mm", 10), "aten::mm");
  EXPECT_EQ(fit_width("aten::scaled_dot_product_attention", 12), "aten::sca...");
  EXPECT_EQ(fit_width("transformer.h.11.attn.c_attn", 12, /*keep_tail=*/true), "...tn.c_attn");
  EXPECT_EQ(fit_width("abcdef", 2), "..");
  // A cut never splits a UTF-8 character.
  EXPECT_EQ(fit_width("a\xc3\xa9\xc3\xa9" "b", 5), "a...");
  EXPECT_EQ(fit_width("a\xc3\xa9\xc3\xa9" "b", 5, /*keep_tail=*/true), "...b");
}

}  // namespace
