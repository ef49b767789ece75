// The terminal report's layout: humanized units, names shortened in the middle and kept distinct, prose
// wrapped, colour that never counts as width; and the whole report within 100 columns (or --width N)
// for real captures, with every --by table.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "opprof/pipeline/attribute.hpp"
#include "opprof/report/terminal.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/text.hpp"
#include "profile_fixture.hpp"
#include "cli_harness.hpp"

using namespace opprof;
using namespace opprof::testing;

namespace {

using opprof::test::fixture;

// Every line of text: (line number, display width) of those wider than width.
std::vector<std::pair<std::size_t, std::size_t>> lines_wider_than(const std::string& text, std::size_t width) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::size_t n = 0;
  for (std::string_view line : split_lines(text)) {
    ++n;
    if (display_width(line) > width) out.emplace_back(n, display_width(line));
  }
  return out;
}

}  // namespace

TEST(ReportUnits, HumanizedWithThreeSignificantDigits) {
  EXPECT_EQ(format_duration_ns(999), "999 ns");
  EXPECT_EQ(format_duration_ns(1500), "1.50 µs");
  EXPECT_EQ(format_duration_ns(999'960), "1.00 ms");  // rounding carries into the next unit
  EXPECT_EQ(format_duration_ns(2'570'000), "2.57 ms");
  EXPECT_EQ(format_duration_ns(61'000'000'000), "61.0 s");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(4096), "4.10 KB");
  EXPECT_EQ(format_bytes(1.5e9), "1.50 GB");
  EXPECT_EQ(format_bytes(-1), "-");
  EXPECT_EQ(format_bandwidth_gbps(0.85), "850 MB/s");
  EXPECT_EQ(format_bandwidth_gbps(348.0), "348 GB/s");
  EXPECT_EQ(format_bandwidth_gbps(1138.8), "1.14 TB/s");
  EXPECT_EQ(format_flop_rate_gflops(12.0), "12.0 GFLOP/s");
  EXPECT_EQ(format_flop_rate_gflops(312'400), "312 TFLOP/s");
  EXPECT_EQ(format_flop_rate_gflops(-1), "-");
  EXPECT_EQ(format_pct(70.04), "70.0%");
  EXPECT_EQ(format_speedup(1.5234), "1.52x");
}

TEST(ReportLayout, DisplayWidthCountsCharactersNotBytesOrEscapes) {
  EXPECT_EQ(display_width("12.3 µs"), 7u);
  EXPECT_EQ(display_width("a…b"), 3u);
  EXPECT_EQ(display_width(Style(true).bold("abc")), 3u);
  EXPECT_EQ(Style(false).bold("abc"), "abc");
  EXPECT_NE(Style(true).bold("abc"), "abc");
}

TEST(ReportLayout, NamesShortenedInTheMiddleStayDistinct) {
  const std::vector<std::string> names = {"triton_per_fused_add_addmm_native_layer_norm_view_5",
                                          "triton_per_fused_add_addmm_native_layer_norm_view_12",
                                          "triton_per_fused_add_addmm_native_layer_norm_6", "aten::mm",
                                          "triton_per_fused_add_addmm_native_layer_norm_view_5"};
  for (std::size_t width : {12u, 20u, 30u, 40u}) {
    const std::vector<std::string> out = shorten_distinct(names, width);
    ASSERT_EQ(out.size(), names.size());
    for (const std::string& s : out) EXPECT_LE(display_width(s), width) << s;
    EXPECT_EQ(std::set<std::string>(out.begin(), out.begin() + 4).size(), 4u) << "width " << width;
    EXPECT_EQ(out[0], out[4]);  // equal names stay equal
    EXPECT_EQ(out[3], "aten::mm");
  }
  EXPECT_EQ(shorten_middle("triton_per_fused_add_addmm_native_layer_norm_view_5", 20), "triton_per…rm_view_5");
  // Names that differ only deep in the middle get another cut, or a number.
  const std::vector<std::string> deep = {"prefix_aaaaaaaa_X_bbbbbbbb_suffix", "prefix_aaaaaaaa_Y_bbbbbbbb_suffix"};
  const std::vector<std::string> cut = shorten_distinct(deep, 10);
  EXPECT_NE(cut[0], cut[1]);
  EXPECT_LE(display_width(cut[0]), 10u);
  EXPECT_LE(display_width(cut[1]), 10u);
}

TEST(ReportLayout, ProseWrapsWithinTheWidth) {
  const std::string text =
      "GPU clocks were not locked during the capture: kernel times move with boost clock and temperature, so "
      "compare two profiles with care. averyveryverylongwordthatdoesnotfitonanylineatall";
  const auto lines = wrap_text(text, 30, "warning: ", "         ");
  ASSERT_GT(lines.size(), 3u);
  EXPECT_TRUE(starts_with(lines[0], "warning: GPU clocks"));
  for (const std::string& l : lines) EXPECT_LE(display_width(l), 30u) << l;
  for (std::size_t i = 1; i < lines.size(); ++i) EXPECT_TRUE(starts_with(lines[i], "         ")) << lines[i];
}

class ReportFit : public ::testing::Test {
 protected:
  // The committed captures, attributed once for the whole suite.
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    struct Capture {
      const char* name;
      const char* trace;
      bool ncu, inductor;
    };
    // Eager and compiled inference with ncu, an LSTM (cuDNN), a training step (backward, optimizer).
    for (const Capture& c : {Capture{"gpt2_eager", "trace.json.gz", true, false},
                             Capture{"gpt2_compiled", "trace.json.gz", true, true},
                             Capture{"lstm", "trace.json.gz", true, false},
                             Capture{"train/gpt2_eager", "torch_profiler.json.gz", false, false}}) {
      AttributeRequest r;
      const std::string base = fixture(c.name);
      r.trace = base + "/" + c.trace;
      if (c.ncu) r.ncu = base + "/ncu.csv.gz";
      if (c.inductor) r.inductor = base + "/inductor";
      std::string file = c.name;  // "train/gpt2_eager" must not overwrite "gpt2_eager"
      for (char& ch : file)
        if (ch == '/') ch = '_';
      const std::string db = dir_->file(file + ".db");
      r.output = db;  // attribute_capture writes it
      attribute_capture(r);
      dbs_.push_back(db);
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
    dbs_.clear();
  }
  static TempDir* dir_;
  static std::vector<std::string> dbs_;
};
TempDir* ReportFit::dir_ = nullptr;
std::vector<std::string> ReportFit::dbs_;

TEST_F(ReportFit, EveryLineFitsTheWidthForEveryFixtureAndTable) {
  for (const std::string& db : dbs_) {
    const ProfileReader profile(db);
    for (std::size_t width : {100u, 80u, 60u, 40u, 160u}) {
      for (ReportBy by : {ReportBy::kOperator, ReportBy::kModule, ReportBy::kFamily, ReportBy::kSourceLine,
                          ReportBy::kPhase}) {
        ReportOptions o;
        o.width = width;
        o.by = by;
        o.top = 0;  // every row: the longest names too
        o.depth = 0;
        o.unattributed = 0;
        const std::string text = render_terminal_report(profile, o);
        for (auto [line, w] : lines_wider_than(text, width))
          ADD_FAILURE() << db << " --width " << width << " --by " << to_string(by) << ": line " << line << " is " << w
                        << " columns\n"
                        << text;
      }
    }
  }
}

TEST_F(ReportFit, TheCompiledCapturesThreeLayerNormKernelsPrintDistinctly) {
  const ProfileReader profile(dbs_[1]);
  ReportOptions o;
  o.top = 0;
  const std::string text = render_terminal_report(profile, o);
  std::vector<std::string> rows;
  for (std::string_view line : split_lines(text))
    // triton_per_fused_add_addmm_native_layer_norm_view_{5,6,8}, shortened in the middle at 100 columns
    if (starts_with(line, "  triton_per_fuse") && line.find("yer_norm_view_") != std::string_view::npos)
      rows.emplace_back(line);
  ASSERT_GE(rows.size(), 3u) << text;
  std::set<std::string> names;
  for (const std::string& r : rows) names.insert(r.substr(0, r.find(' ', 2)));
  EXPECT_EQ(names.size(), rows.size()) << text;
}

TEST_F(ReportFit, EachByTableAndTheModuleTreeShowWhatTheyGroup) {
  const ProfileReader profile(dbs_[0]);
  auto report = [&](ReportBy by, int depth = 3, std::string prefix = "") {
    ReportOptions o;
    o.by = by;
    o.depth = depth;
    o.module_prefix = std::move(prefix);
    return render_terminal_report(profile, o);
  };
  const std::string ops = report(ReportBy::kOperator);
  EXPECT_TRUE(contains(ops, "Top operators (10 of ")) << ops;
  EXPECT_TRUE(contains(ops, "      why  ")) << ops;   // the bottleneck's reason under a row
  EXPECT_TRUE(contains(ops, "      next ")) << ops;   // and the advice
  EXPECT_TRUE(contains(ops, "Module tree (")) << ops;
  EXPECT_TRUE(contains(ops, "\n  transformer ")) << ops;
  EXPECT_TRUE(contains(ops, "\n    h ")) << ops;
  EXPECT_FALSE(contains(ops, "[no module]")) << ops;  // not a module
  EXPECT_TRUE(contains(report(ReportBy::kFamily), "Top kernel families (10 of ")) << report(ReportBy::kFamily);
  const std::string phases = report(ReportBy::kPhase);
  EXPECT_TRUE(contains(phases, "Phases (1 of 1, by kernel time)")) << phases;
  EXPECT_TRUE(contains(phases, "\n  forward ")) << phases;
  EXPECT_TRUE(contains(report(ReportBy::kSourceLine), "Top source lines (")) << report(ReportBy::kSourceLine);
  const std::string modules = report(ReportBy::kModule);
  EXPECT_FALSE(contains(modules, "Top operators")) << modules;
  // --module: the subtree of one layer; --depth counts from it.
  const std::string layer = report(ReportBy::kModule, 2, "transformer.h.3");
  EXPECT_TRUE(contains(layer, "Module tree under transformer.h.3 (")) << layer;
  EXPECT_TRUE(contains(layer, "\n  transformer.h.3 ")) << layer;
  EXPECT_TRUE(contains(layer, "\n    mlp ")) << layer;
  EXPECT_FALSE(contains(layer, "c_fc")) << layer;  // level 3 below the prefix
  EXPECT_FALSE(contains(layer, "\n    h ")) << layer;
  EXPECT_TRUE(contains(report(ReportBy::kModule, 3, "nope"), "Module tree: no module nope"));
}

TEST_F(ReportFit, ColourOnlyWhenAsked) {
  const ProfileReader profile(dbs_[0]);
  ReportOptions o;
  EXPECT_FALSE(contains(render_terminal_report(profile, o), "\x1b["));
  o.color = true;
  const std::string coloured = render_terminal_report(profile, o);
  EXPECT_TRUE(contains(coloured, "\x1b[1m"));
  EXPECT_TRUE(lines_wider_than(coloured, 100).empty());  // escapes take no columns
}
