// Six kernels whose bottleneck is known in advance (examples/microkernels.py), captured on an H200
// (tests/fixtures/microkernels/README.md): every kernel, in its own module, gets its expected class, and the
// FLOPs ncu counts for the two GEMMs are the GEMMs' 2*M*N*K.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "golden_checks.hpp"
#include "opprof/attribute/engine.hpp"
#include "opprof/ingest/kineto.hpp"
#include "opprof/ingest/ncu_csv.hpp"
#include "opprof/match/ncu_match.hpp"
#include "opprof/metrics/aggregate.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

using namespace opprof;

namespace {

// The GEMM shapes of examples/microkernels.py (GEMM_BF16_MNK, GEMM_FP32_MNK), as the fixture README states.
constexpr double kBf16M = 8192, kBf16N = 8192, kBf16K = 8192;
constexpr double kFp32M = 4096, kFp32N = 4096, kFp32K = 4096;

struct Microkernels {
  Timeline tl;
  AttributionTable attr;
  NcuTable ncu;
  NcuMatch match;
  KernelMetrics km;
  Aggregates agg;
  std::string chip;

  Microkernels() {
    const std::string dir = std::string(OPPROF_FIXTURES_DIR) + "/microkernels";
    tl = read_kineto_trace(dir + "/trace.json.gz");
    attr = attribute_timeline(tl, nullptr, AttributionOptions{});
    ncu = read_ncu_csv(dir + "/ncu.csv.gz");
    match = match_ncu(tl, ncu);
    chip = chip_for_capture(tl.metadata);
    km = collect_kernel_metrics(tl, ncu, match, default_metric_set().for_chip(chip));
    agg = aggregate(tl, attr, km);
  }

  const GroupStats& module(const std::string& name) const {
    auto it = std::find_if(agg.modules.begin(), agg.modules.end(), [&](const GroupStats& g) {
      return g.key == name || (g.key.size() > name.size() && g.key.ends_with("." + name));
    });
    if (it == agg.modules.end()) throw std::runtime_error("no module " + name);
    return *it;
  }

  double metric(const GroupStats& g, std::string_view name) const {
    for (std::size_t j = 0; j < km.metrics.size(); ++j)
      if (km.metrics[j].name == name) return g.metric[j];
    return std::nan("");
  }
};

const Microkernels& fixture() {
  static const Microkernels m;
  return m;
}

}  // namespace

TEST(GoldenMicrokernels, EveryKernelHasCountersOfTheWholeDefaultSet) {
  const Microkernels& m = fixture();
  EXPECT_EQ(m.chip, "gh100");
  opprof::testing::expect_ncu_matches_every_kernel(m.tl, m.ncu, m.match);
  EXPECT_EQ(m.match.matched, 6u);
  EXPECT_TRUE(m.km.missing.empty()) << m.km.missing.front();
}

TEST(GoldenMicrokernels, EveryKernelGetsItsExpectedClass) {
  const Microkernels& m = fixture();
  const std::pair<const char*, const char*> expected[] = {
      {"streaming_copy", "dram-bound"},       {"bf16_gemm", "tensor-bound"},
      {"fp32_simt_gemm", "compute-bound"},    {"tiny", "launch-bound"},
      {"pointer_chase", "latency-bound"},     {"smem_capped_chase", "occupancy-limited"},
  };
  for (const auto& [module, label] : expected) {
    const GroupStats& g = m.module(module);
    EXPECT_EQ(g.kernels, 1u) << module;
    EXPECT_EQ(g.bottleneck, label) << module << ": " << g.bottleneck_why;
  }
  // The SIMT GEMM's shared memory is as busy as its FMA pipe; the advice is the tensor cores all the same.
  const GroupStats& simt = m.module("fp32_simt_gemm");
  EXPECT_GE(m.metric(simt, "l1tex__throughput.avg.pct_of_peak_sustained_active"), 60.0);
  EXPECT_NE(simt.bottleneck_why.find("Next: use the tensor cores (TF32/BF16)"), std::string::npos)
      << simt.bottleneck_why;
  // The two chases differ in what holds their warps back: the grid (one warp per SM) or the shared memory.
  EXPECT_NE(m.module("pointer_chase").bottleneck_why.find("not capped by registers or shared memory"),
            std::string::npos);
  const GroupStats& capped = m.module("smem_capped_chase");
  EXPECT_DOUBLE_EQ(capped.shared_mem_occupancy_cap_pct, 12.5);  // one 8-warp block of 64 warps
  EXPECT_NE(capped.bottleneck_why.find("shared memory cap occupancy at 12.5%"), std::string::npos)
      << capped.bottleneck_why;
}

TEST(GoldenMicrokernels, GemmFlopsAreTwoMnkAndSplitByWhereTheyRan) {
  const Microkernels& m = fixture();
  const GroupStats& bf16 = m.module("bf16_gemm");
  const double bf16_flops = 2 * kBf16M * kBf16N * kBf16K;
  const double ncu_ns = m.metric(bf16, "gpu__time_duration.sum");
  ASSERT_GT(ncu_ns, 0);
  // Achieved FLOP/s within 2 % of 2*M*N*K over the kernel's duration (ncu's; the timeline's is within 1 % of it).
  // The counters see 1.6 % more than 2*M*N*K: cuBLAS's 320-wide tiles cover 8320 of the 8192 columns.
  EXPECT_NEAR(bf16.gflops / (bf16_flops / ncu_ns), 1.0, 0.02) << bf16.gflops;
  EXPECT_NEAR(bf16.gflops / (bf16_flops / double(bf16.time_ns)), 1.0, 0.02) << bf16.gflops;
  EXPECT_NEAR(bf16.tensor_flops / bf16_flops, 1.0, 0.02);
  EXPECT_DOUBLE_EQ(bf16.tensor_gflops, bf16.tensor_flops / ncu_ns);
  EXPECT_LT(bf16.fp32_flops, 1e-3 * bf16.tensor_flops);  // the epilogue's few FP32 operations at most
  // 1.1e12 FLOP over 1.4 GB of DRAM traffic, about 800 FLOP/byte: right of the H200's BF16 ridge (about 200),
  // where counting FP32 CUDA-core work alone put it near 0.
  EXPECT_GT(bf16.arithmetic_intensity, 500.0);

  const GroupStats& simt = m.module("fp32_simt_gemm");
  const double fp32_flops = 2 * kFp32M * kFp32N * kFp32K;
  EXPECT_NEAR(simt.fp32_flops / fp32_flops, 1.0, 0.02);
  EXPECT_EQ(simt.tensor_flops, 0.0);
  EXPECT_NEAR(simt.fp32_gflops / (fp32_flops / m.metric(simt, "gpu__time_duration.sum")), 1.0, 0.02);
}

TEST(GoldenMicrokernels, ACaptureWithAnotherUnitThanTheSetDeclaresIsRefused) {
  // The same capture with the L2 sector count's unit cell saying "byte": read, it would be taken for bytes.
  std::string text = read_file(std::string(OPPROF_FIXTURES_DIR) + "/microkernels/ncu.csv.gz");
  std::vector<std::string_view> lines = split_lines(text);
  std::size_t header = 0;
  while (!starts_with(lines[header], "\"ID\"")) ++header;
  std::vector<std::string_view> names = split(lines[header], ',');
  std::vector<std::string_view> units = split(lines[header + 1], ',');
  ASSERT_EQ(names.size(), units.size());  // no commas inside these cells
  std::size_t column = 0, char_column = 1;
  while (names[column] != "\"lts__t_sectors.sum\"") char_column += units[column++].size() + 1;
  ASSERT_EQ(units[column], "\"sector\"");
  std::string rewritten;
  for (std::size_t l = 0; l < lines.size(); ++l) {
    std::string line(lines[l]);
    if (l == header + 1) line.replace(char_column - 1, units[column].size(), "\"byte\"");
    rewritten += line + "\n";
  }
  const std::string path = (std::filesystem::temp_directory_path() / "opprof_microkernels_byte.csv").string();
  std::ofstream(path, std::ios::binary) << rewritten;
  const Microkernels& m = fixture();
  NcuTable ncu = read_ncu_csv(path);  // "byte" is a base unit: only the declaration tells it is wrong
  try {
    collect_kernel_metrics(m.tl, ncu, match_ncu(m.tl, ncu), default_metric_set().for_chip("gh100"));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(fmt::format("{}:{}:{}: ", path, header + 2, char_column)), std::string::npos) << what;
    EXPECT_NE(what.find("\"lts__t_sectors.sum\" is in \"byte\", but <built-in>:"), std::string::npos) << what;
    EXPECT_NE(what.find("declares \"sector\""), std::string::npos) << what;
  }
  std::filesystem::remove(path);
}
