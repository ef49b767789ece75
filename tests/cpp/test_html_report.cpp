// The HTML report as a document: one self-contained page, its data blob read back with simdjson (an
// independent parser) against the database, escaping of what the profile holds, and the GPU ceilings
// catalog. tests/python/test_html_report.py renders the page in Chromium.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <optional>
#include <string>

#include "opprof/metrics/gpu_ceilings.hpp"
#include "opprof/report/html.hpp"
#include "opprof/store/profile_db.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/error.hpp"
#include "profile_fixture.hpp"

using namespace opprof;
using namespace opprof::testing;

namespace {

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

// The text of <script type="application/json" id="opprof-data">, as the page's JSON.parse reads it.
std::string data_blob(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"opprof-data\">";
  std::size_t start = page.find(open);
  if (start == std::string::npos) return "";
  start += open.size();
  return page.substr(start, page.find("</script>", start) - start);
}

class HtmlReportTest : public ::testing::Test {
 protected:
  void SetUp() override { build_test_profile(p); }
  ProfileReader write_and_open() {
    std::string path = dir.file("profile.db");
    write_profile_db(path, p.inputs(true));
    return ProfileReader(path);
  }
  TestProfile p;
  TempDir dir;
  simdjson::dom::parser parser;
};

TEST_F(HtmlReportTest, OnePageWithItsDataTheChartLibraryAndItsLicenceInline) {
  ProfileReader r = write_and_open();
  const std::string page = render_html_report(r);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(page, "id=\"opprof-data\""), 1u);
  EXPECT_NE(page.find("Chart.js v3.9.1"), std::string::npos);
  EXPECT_NE(page.find("Permission is hereby granted, free of charge"), std::string::npos);
  EXPECT_NE(page.find("window.opprofCharts"), std::string::npos);
  // Offline: nothing is loaded from elsewhere.
  EXPECT_EQ(count(page, "<script src"), 0u);
  EXPECT_EQ(count(page, "<link"), 0u);
  // Three script elements (data, Chart.js, the page's script) and each closes once.
  EXPECT_EQ(count(page, "<script"), 3u);
  EXPECT_EQ(count(page, "</script>"), 3u);
}

TEST_F(HtmlReportTest, TheBlobHoldsTheDatabasesFigures) {
  ProfileReader r = write_and_open();
  const std::string blob = data_blob(render_html_report(r));
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(blob).get(doc), simdjson::SUCCESS) << blob;

  const Coverage& c = r.coverage();
  EXPECT_EQ(doc["coverage"]["kernel_time_ns"].get_int64().value(), c.kernel_time_ns);
  EXPECT_EQ(doc["coverage"]["attributed_ns"].get_int64().value(), c.attributed_ns);
  simdjson::dom::array paths = doc["coverage"]["paths"].get_array();
  ASSERT_EQ(paths.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(paths.at(i)["name"].get_string().value(), kAttributionPathNames[i]);
    EXPECT_EQ(paths.at(i)["ns"].get_int64().value(), c.by_path_ns[i]);
  }
  for (auto [key, by] : {std::pair{"operators", GroupBy::kOperator}, std::pair{"modules", GroupBy::kModule},
                         std::pair{"families", GroupBy::kFamily}}) {
    const std::vector<GroupStats> groups = r.groups(by);
    simdjson::dom::array rows = doc[key].get_array();
    ASSERT_EQ(rows.size(), groups.size()) << key;  // every group, not the top few
    for (std::size_t i = 0; i < groups.size(); ++i) {
      EXPECT_EQ(rows.at(i)["name"].get_string().value(), groups[i].key);
      EXPECT_EQ(rows.at(i)["time_ns"].get_int64().value(), groups[i].time_ns);
      EXPECT_EQ(rows.at(i)["kernels"].get_uint64().value(), groups[i].kernels);
    }
  }
  // The bottleneck class with the figures behind it.
  EXPECT_EQ(doc["operators"].at(0)["bottleneck"].get_string().value(), r.groups(GroupBy::kOperator)[0].bottleneck);
  EXPECT_EQ(doc["operators"].at(0)["bottleneck_why"].get_string().value(),
            r.groups(GroupBy::kOperator)[0].bottleneck_why);

  // One row per kernel name: the two ampere_sgemm launches are one row; the memcpy is not a kernel.
  simdjson::dom::array kernels = doc["kernels"].get_array();
  EXPECT_EQ(kernels.size(), 5u);
  EXPECT_EQ(kernels.at(0)["name"].get_string().value(), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(kernels.at(0)["kernels"].get_uint64().value(), 2u);
  EXPECT_EQ(kernels.at(0)["time_ns"].get_int64().value(), 4000);
  EXPECT_EQ(kernels.at(0)["counted_kernels"].get_uint64().value(), 2u);
  // ncu's replay durations of k0 and k2 (1900 + 1950 ns), summed.
  EXPECT_EQ(kernels.at(0)["ncu_time_ns"].get_double().value(), 3850.0);
  // The test profile counts no FLOPs: unknown, not zero.
  EXPECT_TRUE(kernels.at(0)["flops"].is_null());

  // Ceilings from the catalog, by the capture's GPU.
  EXPECT_EQ(doc["ceilings"]["device"].get_string().value(), "NVIDIA H200");
  EXPECT_EQ(doc["ceilings"]["dram_gbps"].get_double().value(), 4800.0);
  EXPECT_EQ(doc["ceilings"]["bf16_gflops"].get_double().value(), 989400.0);

  EXPECT_EQ(doc["unattributed"].get_array().size(), c.unattributed.size());
  EXPECT_EQ(doc["opaque"].at(0)["backend"].get_string().value(), "cuDNN RNN");
  bool gpu = false;
  for (simdjson::dom::element fact : doc["capture"].get_array())
    gpu |= fact.at(0).get_string().value() == "GPU" && fact.at(1).get_string().value() == "NVIDIA H200";
  EXPECT_TRUE(gpu) << blob;
}

TEST_F(HtmlReportTest, WhatTheProfileHoldsCannotBreakOutOfThePage) {
  const std::string hostile = "</script><script>alert(1)</script> <!-- \"q\" 'a' & \n caf\xc3\xa9";
  p.cov.unattributed[0].family = hostile;
  p.metadata["note"] = hostile;
  ProfileReader r = write_and_open();
  const std::string page = render_html_report(r);
  EXPECT_EQ(page.find("alert(1)</script>"), std::string::npos);
  EXPECT_EQ(count(page, "</script>"), 3u);
  const std::string blob = data_blob(page);
  EXPECT_EQ(blob.find('<'), std::string::npos);
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(blob).get(doc), simdjson::SUCCESS) << blob;
  EXPECT_EQ(doc["unattributed"].at(0)["family"].get_string().value(), hostile);
  EXPECT_EQ(doc["metadata"]["note"].get_string().value(), hostile);
}

TEST_F(HtmlReportTest, NoCeilingsForAGpuTheCatalogLacks) {
  p.tl.metadata["device.0.name"] = "Some Future GPU";
  ProfileReader r = write_and_open();
  simdjson::dom::element doc;
  const std::string blob = data_blob(render_html_report(r));
  ASSERT_EQ(parser.parse(blob).get(doc), simdjson::SUCCESS);
  EXPECT_TRUE(doc["ceilings"].is_null());
}

TEST(HtmlEscape, ScriptElementJsonAndHtmlText) {
  EXPECT_EQ(json_for_script_element(R"({"a":"</script><!--&"})"), R"({"a":"\u003c/script\u003e\u003c!--\u0026"})");
  EXPECT_EQ(html_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST(GpuCeilings, TheCatalogHasTheH200AndNothingByPrefix) {
  std::optional<GpuCeilings> h200 = builtin_gpu_ceilings("NVIDIA H200");
  ASSERT_TRUE(h200.has_value());
  EXPECT_EQ(h200->dram_gbps, 4800.0);
  EXPECT_EQ(h200->fp32_gflops, 67000.0);
  EXPECT_FALSE(builtin_gpu_ceilings("NVIDIA H2").has_value());
  std::optional<GpuCeilings> a100 = builtin_gpu_ceilings("NVIDIA A100-SXM4-80GB");
  ASSERT_TRUE(a100.has_value());
  EXPECT_TRUE(std::isnan(a100->fp8_gflops));  // "-": no FP8 tensor cores
}

TEST(GpuCeilings, ErrorsNameTheLineAndColumn) {
  try {
    parse_gpu_ceilings("# comment\nGPU X\t100\tfast\t1\t1\t1\t1\tsource\n", "ceil.tsv");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "ceil.tsv:2:11: FP32 TFLOP/s: expected a positive number or -, got 'fast'");
  }
  EXPECT_THROW(parse_gpu_ceilings("GPU X\t100\t1\n", "ceil.tsv"), InputError);
  EXPECT_THROW(parse_gpu_ceilings("GPU X\t-\t1\t1\t1\t1\t1\tsource\n", "ceil.tsv"), InputError);
}

}  // namespace
