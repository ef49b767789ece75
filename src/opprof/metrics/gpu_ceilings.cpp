#include "opprof/metrics/gpu_ceilings.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "opprof/util/embedded.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {

namespace {

constexpr std::size_t kColumns = 8;
constexpr const char* kColumnNames[kColumns] = {"device",       "DRAM GB/s",     "FP32 TFLOP/s", "TF32 TFLOP/s",
                                                "BF16 TFLOP/s", "FP8 TFLOP/s",   "FP64 TFLOP/s", "source"};

// A TFLOP/s or GB/s figure: a positive number, or "-" (no such unit: NaN).
double parse_figure(std::string_view text, const std::string& source, std::uint64_t line, std::uint64_t column,
                    const char* what) {
  text = trim(text);
  if (text == "-") return std::numeric_limits<double>::quiet_NaN();
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !(v > 0))
    throw InputError(source, fmt::format("{}: expected a positive number or -, got '{}'", what, text),
                     {line, column, 0, true});
  return v;
}

}  // namespace

std::vector<GpuCeilings> parse_gpu_ceilings(std::string_view text, const std::string& source) {
  std::vector<GpuCeilings> out;
  std::uint64_t line_no = 0;
  for (std::string_view line : split_lines(text)) {
    ++line_no;
    if (trim(line).empty() || trim(line).front() == '#') continue;
    auto cols = split(line, '\t');
    if (cols.size() != kColumns)
      throw InputError(source, fmt::format("expected {} tab-separated columns (device, DRAM GB/s, FP32, TF32, BF16, "
                                           "FP8, FP64 TFLOP/s, source), got {}",
                                           kColumns, cols.size()),
                       {line_no, 1, 0, true});
    // 1-based column of each field, for the error position.
    std::uint64_t col[kColumns] = {};
    for (std::size_t i = 0, at = 1; i < kColumns; at += cols[i].size() + 1, ++i) col[i] = at;
    GpuCeilings c;
    c.device = std::string(trim(cols[0]));
    c.source = std::string(trim(cols[7]));
    if (c.device.empty() || c.source.empty())
      throw InputError(source, "the device name and the source must not be empty",
                       {line_no, c.device.empty() ? col[0] : col[7], 0, true});
    auto figure = [&](std::size_t i) { return parse_figure(cols[i], source, line_no, col[i], kColumnNames[i]); };
    c.dram_gbps = figure(1);
    if (std::isnan(c.dram_gbps))
      throw InputError(source, "DRAM GB/s must be known", {line_no, col[1], 0, true});
    // TFLOP/s in the file, GFLOP/s in memory: the unit of the profile's achieved figures.
    c.fp32_gflops = 1e3 * figure(2);
    c.tf32_gflops = 1e3 * figure(3);
    c.bf16_gflops = 1e3 * figure(4);
    c.fp8_gflops = 1e3 * figure(5);
    c.fp64_gflops = 1e3 * figure(6);
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<GpuCeilings> builtin_gpu_ceilings(std::string_view device) {
  for (GpuCeilings& c : parse_gpu_ceilings(embedded_file("gpu_ceilings.tsv"), "gpu_ceilings.tsv"))
    if (c.device == device) return std::move(c);
  return std::nullopt;
}

}  // namespace opprof
