// The HTML page of `opprof optimize`, from two real optimize_report.json files of an H200
// (tests/fixtures/optimizer/README.md): every trial with its verdict, the figures formatted as the text
// report prints them, the chart's blob read back with simdjson, escaping of what the report holds, errors
// that name the file and the field, atomic writes; and the CLI: rendering after the driver, and
// --html-from. tests/python/test_optimize_html.py loads the page in Chromium.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_harness.hpp"
#include "opprof/report/optimize_html.hpp"
#include "opprof/report/optimize_report.hpp"
#include "opprof/util/error.hpp"
#include "profile_fixture.hpp"

using namespace opprof;
using opprof::test::fixture;
using opprof::test::text_of;

namespace {

const std::string kConv = fixture("optimizer/conv_exact/optimize_report.json");
const std::string kLstm = fixture("optimizer/lstm_tf32/optimize_report.json");


void spit(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

bool has(const std::string& page, const std::string& needle) { return page.find(needle) != std::string::npos; }

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

// text with its one occurrence of from replaced by to (the test fails when from is not there once).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  EXPECT_EQ(count(text, from), 1u) << from;
  if (std::size_t at = text.find(from); at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string page_of(const std::string& json) {
  return render_optimize_html(parse_optimize_report(json, "test.json"), "");
}

// The row of the trial numbered index (from 1), from its <tr to its end.
std::string trial_row(const std::string& page, int index) {
  const std::size_t key = page.find(fmt::format("data-key=\"{}\" data-rewrite=", index));
  if (key == std::string::npos) return "";
  const std::size_t start = page.rfind("<tr", key);
  return page.substr(start, page.find("</tr>", start) - start);
}

// The text of the chart's blob, as the page's JSON.parse reads it.
std::string chart_blob(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"opprof-optimize-data\">";
  std::size_t start = page.find(open);
  if (start == std::string::npos) return "";
  start += open.size();
  return page.substr(start, page.find("</script>", start) - start);
}

class OptimizeHtml : public ::testing::Test {
 protected:
  // The page write_optimize_html writes for a fixture (its saved code is beside it).
  std::string written(const std::string& report) {
    const std::string html = dir.file("page.html");
    write_optimize_html(report, html);
    return text_of(html);
  }
  opprof::testing::TempDir dir;
};

TEST_F(OptimizeHtml, EveryTrialAppearsWithItsVerdictAndTheAppliedOnesAreMarked) {
  const std::string page = written(kConv);
  const std::pair<const char*, const char*> trials[] = {{"channels_last", "applied"},
                                                        {"fold_batchnorm", "rejected"},
                                                        {"freezing", "rejected"},
                                                        {"cuda_graphs", "rejected"}};
  for (int i = 0; i < 4; ++i) {
    const auto& [rewrite, verdict] = trials[i];
    const std::string row = trial_row(page, i + 1);
    ASSERT_FALSE(row.empty()) << rewrite;
    EXPECT_TRUE(has(row, fmt::format("data-rewrite=\"{}\" data-verdict=\"{}\"", rewrite, verdict))) << row;
    EXPECT_TRUE(has(row, fmt::format("<span class=\"badge verdict {0}\">{0}</span>", verdict))) << row;
    EXPECT_EQ(row.rfind("<tr class=\"applied\"", 0) == 0, std::string(verdict) == "applied") << row;
  }
  EXPECT_EQ(count(page, "<tr class=\"applied\""), 1u);
  EXPECT_TRUE(has(page, "<p class=\"note\" id=\"applied\">Applied: channels_last</p>"));
  // The reason, as the driver wrote it (escaped).
  EXPECT_TRUE(has(trial_row(page, 2), "does not pay: kernel time 0.998x, wall 0.869x (needs &gt;= 1.02x)"));
  // Each finding with its evidence lines, and the diagnosis without a rewrite.
  EXPECT_TRUE(has(page, "<li>layout conversions (NCHW &lt;-&gt; NHWC): 4 kernels, 55.2 us (14.9 % of kernel time), "
                        "mean 13.8 us</li>"));
  EXPECT_TRUE(has(page, "<td data-col=\"rule\" class=\"name\">fp32_gemms</td><td data-col=\"candidate\" "
                        "class=\"name\">no rewrite (a diagnosis)</td>"));

  const std::string lstm = written(kLstm);
  EXPECT_EQ(count(lstm, "<tr class=\"applied\""), 2u);
  EXPECT_TRUE(has(trial_row(lstm, 1), "data-rewrite=\"rnn_cudnn(lstm)\" data-verdict=\"rejected\""));
  EXPECT_TRUE(has(trial_row(lstm, 3), "data-rewrite=\"cuda_graphs\" data-verdict=\"applied\""));
  EXPECT_TRUE(has(trial_row(lstm, 4), "data-rewrite=\"tf32\" data-verdict=\"applied\""));
  EXPECT_TRUE(has(lstm, "Applied: cuda_graphs, tf32"));
}

TEST_F(OptimizeHtml, FiguresAreFormattedAsTheTextReportPrintsThem) {
  const std::string page = written(kConv);
  // Header: the run.
  EXPECT_TRUE(has(page, "<h1>opprof optimize: examples/conv_block.py</h1>"));
  EXPECT_TRUE(has(page, "inductor &middot; inference &middot; precision: none allowed (numerics-preserving rewrites "
                        "only) &middot; exact tier: max rel within 0.0001"));
  // Baseline and final: kernel us/step, wall median ms, speedups.
  EXPECT_TRUE(has(page, "<div class=\"v\">673.0 &rarr; 633.6 us</div>"));
  EXPECT_TRUE(has(page, "<div class=\"v\">0.914 &rarr; 0.773 ms</div>"));
  EXPECT_TRUE(has(page, "<div class=\"v\">1.062x</div>"));
  EXPECT_TRUE(has(page, "<div class=\"v\">1.182x</div>"));
  EXPECT_TRUE(has(page, "<div class=\"v\">1 of 4</div>"));
  // The baseline's row: 24 kernels over 2 profiled steps; IQR and range of 20 CUDA-event steps.
  EXPECT_TRUE(has(page, "<td data-col=\"kernel_us\" class=\"num\">673.0</td><td data-col=\"kernels\" class=\"num\">24"
                        "</td><td data-col=\"kernel_steps\" class=\"num\">2</td><td data-col=\"wall_median_ms\" "
                        "class=\"num\">0.914</td><td data-col=\"wall_iqr_ms\" class=\"num\">0.901-0.931</td><td "
                        "data-col=\"wall_range_ms\" class=\"num\">0.894-1.468</td><td data-col=\"wall_steps\" "
                        "class=\"num\">20</td><td data-col=\"clock\">cuda events</td>"));
  // A trial: its time, its speedups against the state before it, its numerics and bound.
  const std::string fold = trial_row(page, 2);
  EXPECT_TRUE(has(fold, "<td data-col=\"kernel_us\" class=\"num\">634.8</td>")) << fold;
  EXPECT_TRUE(has(fold, "<td data-col=\"kernel_speedup\" class=\"num\">0.998x</td>")) << fold;
  EXPECT_TRUE(has(fold, "<td data-col=\"wall_ms\" class=\"num\">0.890 (0.878-0.918)</td>")) << fold;
  EXPECT_TRUE(has(fold, "<td data-col=\"wall_speedup\" class=\"num\">0.869x</td>")) << fold;
  EXPECT_TRUE(has(fold, "<td data-col=\"max_abs\" class=\"num\">1.49e-08</td><td data-col=\"max_rel\" "
                        "class=\"num\">8.82e-08</td>"))
      << fold;
  EXPECT_TRUE(has(fold, "<td data-col=\"bound\" class=\"num\">0.0001</td>")) << fold;
  EXPECT_TRUE(has(fold, "<li>batch_norm stage2.bn folded into conv stage2.conv</li>")) << fold;
  EXPECT_TRUE(has(page, "max abs 2.98e-08, max rel 1.76e-07 (1 output tensor(s))"));  // the FP32 noise

  // The precision run: the split of each speedup, and the precision tier's bound.
  const std::string lstm = written(kLstm);
  EXPECT_TRUE(has(lstm, "precision: --allow-precision tf32 within max rel 0.01"));
  EXPECT_TRUE(has(lstm, "<tr data-key=\"kernel\"><td data-col=\"measure\">profiled kernel time</td><td "
                        "data-col=\"total\" class=\"num\">1.616x</td><td data-col=\"exact_only\" "
                        "class=\"num\">0.991x</td><td data-col=\"precision_factor\" class=\"num\">1.631x</td><td data-col=\"precision_share\" "
                        "class=\"num\">100 %</td></tr>"));
  EXPECT_TRUE(has(lstm, "<tr data-key=\"wall\"><td data-col=\"measure\">wall time</td><td data-col=\"total\" "
                        "class=\"num\">4.894x</td><td data-col=\"exact_only\" class=\"num\">3.891x</td><td "
                        "data-col=\"precision_factor\" class=\"num\">1.258x</td><td data-col=\"precision_share\" "
                        "class=\"num\">14 %</td></tr>"));
  const std::string tf32 = trial_row(lstm, 4);
  EXPECT_TRUE(has(tf32, "<td data-col=\"max_abs\" class=\"num\">3.28e-05</td><td data-col=\"max_rel\" "
                        "class=\"num\">0.000369</td>"))
      << tf32;
  EXPECT_TRUE(has(tf32, "<td data-col=\"bound\" class=\"num\">0.01</td>")) << tf32;
  EXPECT_TRUE(has(tf32, "<td data-col=\"tier\">precision</td><td data-col=\"mechanism\">global setting</td>")) << tf32;
  EXPECT_TRUE(has(lstm, "<div class=\"v\">1655.0 &rarr; 1024.4 us</div>"));
}

TEST_F(OptimizeHtml, TheChartBlobHoldsTheBaselineAndEveryMeasuredTrial) {
  const std::string blob = chart_blob(written(kConv));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(blob).get(doc), simdjson::SUCCESS) << blob;
  simdjson::dom::array points = doc["points"].get_array();
  ASSERT_EQ(points.size(), 5u);
  const char* labels[] = {"baseline", "1. channels_last", "2. fold_batchnorm", "3. freezing", "4. cuda_graphs"};
  const char* verdicts[] = {"baseline", "applied", "rejected", "rejected", "rejected"};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(points.at(i)["label"].get_string().value(), labels[i]);
    EXPECT_EQ(points.at(i)["verdict"].get_string().value(), verdicts[i]);
  }
  EXPECT_DOUBLE_EQ(points.at(0)["kernel_us"].get_double().value(), 673.007);
  EXPECT_DOUBLE_EQ(points.at(0)["wall_median_ms"].get_double().value(), 0.913968026638031);
  EXPECT_DOUBLE_EQ(points.at(0)["wall_p25_ms"].get_double().value(), 0.901416003704071);
  EXPECT_DOUBLE_EQ(points.at(0)["wall_p75_ms"].get_double().value(), 0.9313599914312363);
  EXPECT_DOUBLE_EQ(points.at(4)["kernel_us"].get_double().value(), 653.599);
  EXPECT_DOUBLE_EQ(points.at(4)["kernels"].get_double().value(), 21.0);
}

TEST_F(OptimizeHtml, OnePageThatLoadsNothingAndShowsTheSavedCode) {
  const std::string page = written(kConv);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_TRUE(has(page, "Chart.js v3.9.1"));
  EXPECT_TRUE(has(page, "Permission is hereby granted, free of charge"));
  EXPECT_EQ(count(page, "<script src"), 0u);
  EXPECT_EQ(count(page, "<link"), 0u);
  // The blob, Chart.js and the page's script; each closes once.
  EXPECT_EQ(count(page, "<script"), 3u);
  EXPECT_EQ(count(page, "</script>"), 3u);
  EXPECT_EQ(count(page, "<canvas id=\"chart-kernel\">"), 1u);
  EXPECT_EQ(count(page, "<canvas id=\"chart-wall\">"), 1u);
  // The saved code beside the report, escaped, under the path the run recorded.
  EXPECT_TRUE(has(page, "/tmp/opprof_optimizer.4Ojrdn/conv_exact/opprof_optimized.py"));
  EXPECT_TRUE(has(page, "STEPS = [Step(&#39;channels_last&#39;)]"));
  // A report without the file beside it says so.
  const std::string alone = dir.file("optimize_report.json");
  std::filesystem::copy_file(kConv, alone);
  EXPECT_TRUE(has(written(alone), "id=\"saved-code-missing\""));
}

TEST_F(OptimizeHtml, EveryStringFromTheReportIsEscaped) {
  const std::string evil = "<script>alert(1)</script>";
  std::string json = text_of(kConv);
  json = replaced(json, "\"rewrite\": \"fold_batchnorm\",\n   \"together_with\"",
                  "\"rewrite\": \"" + evil + "\",\n   \"together_with\"");
  json = replaced(json, "\"workload\": \"examples/conv_block.py\"", "\"workload\": \"w</title><b>\\\"'&\"");
  json = replaced(json, "\"reason\": \"kernel time 1.062x, wall 1.182x\"", "\"reason\": \"" + evil + "\"");
  const std::string page = page_of(json);
  EXPECT_FALSE(has(page, "<script>alert"));
  EXPECT_FALSE(has(page, "</title><b>"));
  EXPECT_TRUE(has(page, "data-rewrite=\"&lt;script&gt;alert(1)&lt;/script&gt;\""));
  EXPECT_TRUE(has(page, "<td data-col=\"reason\" class=\"text\">&lt;script&gt;alert(1)&lt;/script&gt;</td>"));
  EXPECT_TRUE(has(page, "<title>opprof optimize: w&lt;/title&gt;&lt;b&gt;&quot;&#39;&amp;</title>"));
  // In the chart's blob the label stays JSON that no "</script>" ends.
  EXPECT_TRUE(has(chart_blob(page), "2. \\u003cscript\\u003ealert(1)\\u003c/script\\u003e"));
  EXPECT_EQ(count(page, "<script"), 3u);
  EXPECT_EQ(count(page, "</script>"), 3u);
}

TEST_F(OptimizeHtml, PythonsNonFiniteFloatsAreReadAsSuch) {
  // An FP16 rewrite that overflows: Python's json writes the infinite error as a bare Infinity.
  std::string json = text_of(kConv);
  json = replaced(json, "\"max_abs\": 1.4901161193847656e-08,", "\"max_abs\": Infinity,");
  json = replaced(json, "\"max_rel\": 8.815047003152878e-08,", "\"max_rel\": NaN,");
  json = replaced(json, "\"reason\": \"does not pay: kernel time 0.998x, wall 0.869x (needs >= 1.02x)\"",
                  "\"reason\": \"NaN and Infinity stay words in a string\"");
  const OptimizeReport r = parse_optimize_report(json, "test.json");
  ASSERT_TRUE(r.trials.at(1).numerics);
  EXPECT_TRUE(std::isinf(r.trials[1].numerics->max_abs));
  EXPECT_TRUE(std::isnan(r.trials[1].numerics->max_rel));
  EXPECT_EQ(r.trials[1].reason, "NaN and Infinity stay words in a string");
  const std::string row = trial_row(render_optimize_html(r, ""), 2);
  EXPECT_TRUE(has(row, "<td data-col=\"max_abs\" class=\"num\">inf</td><td data-col=\"max_rel\" "
                       "class=\"num\">nan</td>"))
      << row;
}

TEST_F(OptimizeHtml, GradientErrorsGetColumnsOfTheirOwnWhereTheRunHadThem) {
  EXPECT_FALSE(has(written(kConv), "data-col=\"grad_max_rel\""));  // inference: outputs only
  const std::string json = replaced(text_of(kConv),
                                    "\"max_rel\": 8.815047003152878e-08,\n    \"tensors\": 1,\n"
                                    "    \"grad_max_abs\": null,\n    \"grad_max_rel\": null,\n    \"nonfinite\": \"\"",
                                    "\"max_rel\": 8.815047003152878e-08,\n    \"tensors\": 1,\n"
                                    "    \"grad_max_abs\": 0.5,\n    \"grad_max_rel\": Infinity,\n"
                                    "    \"nonfinite\": \"gradient 3\"");
  const std::string page = page_of(json);
  EXPECT_TRUE(has(page, "<th class=\"num\">gradients max abs</th><th class=\"num\">gradients max rel</th>"));
  const std::string row = trial_row(page, 2);
  EXPECT_TRUE(has(row, "<td data-col=\"max_rel\" class=\"num\">8.82e-08 (non-finite values in gradient 3)</td><td "
                       "data-col=\"grad_max_abs\" class=\"num\">0.5</td><td data-col=\"grad_max_rel\" "
                       "class=\"num\">inf</td><td data-col=\"bound\" class=\"num\">0.0001</td>"))
      << row;
  // The trials without gradient figures leave those cells empty of numbers.
  EXPECT_TRUE(has(trial_row(page, 1), "<td data-col=\"grad_max_abs\" class=\"num\">-</td>"));
}

TEST_F(OptimizeHtml, AMalformedOrIncompleteReportIsAnInputErrorNamingTheFileAndTheField) {
  const std::string good = text_of(kConv);
  auto error_of = [&](const std::string& json) -> std::string {
    const std::string path = dir.file("optimize_report.json");
    spit(path, json);
    try {
      write_optimize_html(path, dir.file("page.html"));
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path);
      return e.message();
    }
    ADD_FAILURE() << "no InputError";
    return "";
  };
  EXPECT_TRUE(has(error_of(good.substr(0, good.size() / 2)), "malformed JSON"));
  EXPECT_TRUE(has(error_of(""), "malformed JSON"));
  EXPECT_EQ(error_of("[1, 2]"), "the document: not an object");
  EXPECT_EQ(error_of(replaced(good, "\"verdict\": \"rejected\",\n   \"reason\": \"does not pay: kernel time 0.998x",
                              "\"reason\": \"does not pay: kernel time 0.998x")),
            "trials[1]: no \"verdict\"");
  EXPECT_EQ(error_of(replaced(good, "\"median_ms\": 0.913968026638031,", "\"median_ms\": \"fast\",")),
            "baseline.wall.median_ms: not a number");
  EXPECT_EQ(error_of(replaced(good, "\"train\": false,", "\"train\": 0,")), "train: not true or false");
  EXPECT_EQ(error_of(replaced(good, "\"applied\": [\n  \"channels_last\"\n ],", "\"applied\": {},")),
            "applied: not an array");
  EXPECT_EQ(error_of(replaced(good, "\"kernel\": {\n   \"total\": 1.0621727598922688,", "\"kernel\": {\n")),
            "speedup.kernel: no \"total\"");
  // No page, and no temporary of one, after any of them.
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"optimize_report.json"});

  EXPECT_THROW(write_optimize_html(dir.file("none.json"), dir.file("page.html")), InputError);
}

TEST_F(OptimizeHtml, AFailedRenderLeavesTheEarlierPageWhole) {
  const std::string html = dir.file("page.html");
  write_optimize_html(kConv, html);
  const std::string before = text_of(html);
  const std::string broken = dir.file("broken.json");
  spit(broken, text_of(kLstm).substr(0, 4000));
  EXPECT_THROW(write_optimize_html(broken, html), InputError);
  EXPECT_EQ(text_of(html), before);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"broken.json", "page.html"}));
}

// The command: the page after the driver, and --html-from.
class OptimizeHtmlCli : public opprof::test::ScratchDir {
 protected:
  // A stand-in for python: finds --out DIR in its arguments and runs body there (after `cd`).
  void fake_python(const std::string& body) {
    write_program("python", "while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; shift; done\n"
                            "mkdir -p \"$out\" && cd \"$out\" || exit 9\n" + body);
  }
  opprof::test::Result optimize(const std::string& extra = "") {
    return opprof::test::run("optimize " + opprof::test::example("conv_block.py") + " --python " + path("python") +
                             " -o " + path("out") + " " + extra);
  }
};

TEST_F(OptimizeHtmlCli, WritesThePageBesideTheReportAfterTheDriverSucceeds) {
  const std::string fixture_dir = fixture("optimizer/conv_exact");
  fake_python("cp " + fixture_dir + "/optimize_report.json " + fixture_dir + "/opprof_optimized.py .\n");
  const opprof::test::Result r = optimize();
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string html = path("out/optimize_report.html");
  EXPECT_TRUE(has(r.output, "opprof: HTML report written to " + html)) << r.output;
  const std::string page = text_of(html);
  EXPECT_TRUE(has(page, "data-rewrite=\"channels_last\" data-verdict=\"applied\""));
  EXPECT_TRUE(has(page, "STEPS = [Step(&#39;channels_last&#39;)]"));
}

TEST_F(OptimizeHtmlCli, NoPageWhenTheDriverFailsOrWritesNoReport) {
  // A driver that fails: its status passed on, no page.
  fake_python("cp " + kConv + " .\nexit 3\n");
  opprof::test::Result r = optimize();
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_FALSE(std::filesystem::exists(path("out/optimize_report.html")));
  // One that succeeds without writing a report, where an earlier run left one: no page from the old one.
  std::filesystem::last_write_time(path("out/optimize_report.json"),
                                   std::filesystem::file_time_type::clock::now() - std::chrono::hours(1));
  fake_python("exit 0\n");
  r = optimize();
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "wrote no optimize_report.json in " + path("out") + ": no HTML report")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(path("out/optimize_report.html")));
  // A report the driver wrote that cannot be read: a failure (1), not the user's bad input.
  fake_python("echo '{\"workload\": 1}' > optimize_report.json\n");
  r = optimize();
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "optimize_report.html not written")) << r.output;
  EXPECT_TRUE(has(r.output, "workload: not a string")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(path("out/optimize_report.html")));
}

TEST_F(OptimizeHtmlCli, HtmlFromRendersAnExistingReportAgain) {
  std::filesystem::create_directories(path("run"));
  std::filesystem::copy_file(kLstm, path("run/optimize_report.json"));
  opprof::test::Result r = opprof::test::run("optimize --html-from " + path("run/optimize_report.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "opprof: HTML report written to " + path("run/optimize_report.html"))) << r.output;
  EXPECT_TRUE(has(text_of(path("run/optimize_report.html")), "data-rewrite=\"tf32\" data-verdict=\"applied\""));

  r = opprof::test::run("optimize --html-from " + kLstm + " -o " + path("elsewhere.html"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(text_of(path("elsewhere.html")), "opprof optimize: examples/lstm_compiled.py"));

  // Bad input: exit status 2 and one line.
  r = opprof::test::run("optimize --html-from " + kLstm + " -o " + path("no/such/dir/page.html"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, "does not exist")) << r.output;
  r = opprof::test::run("optimize --html-from " + path("missing.json"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, path("missing.json"))) << r.output;
  r = opprof::test::run("optimize " + opprof::test::example("conv_block.py") + " --html-from " + kLstm);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, "--html-from: renders an existing report and runs nothing: workload does not go with it"))
      << r.output;
  r = opprof::test::run("optimize --html-from " + kLstm + " --train");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, "--train does not go with it")) << r.output;
  r = opprof::test::run("optimize");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, "give a workload module, or --html-from REPORT.json")) << r.output;
}

}  // namespace
