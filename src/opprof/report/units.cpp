#include "opprof/report/units.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>

namespace opprof {
namespace {

// Three significant digits: "812", "12.3", "4.21".
std::string three_digits(double v) {
  const double a = std::fabs(v);
  if (a >= 99.95) return fmt::format("{:.0f}", v);
  if (a >= 9.995) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

// v in base units with the largest of the prefixed units (factor 1000 apart) that keeps it >= 1.
std::string scaled(double v, const std::array<const char*, 5>& units) {
  if (!std::isfinite(v) || v < 0) return "-";
  std::size_t i = 0;
  // Rounding can carry 999.96 up to "1000": then the next unit reads better.
  while (i + 1 < units.size() && v >= 999.5) {
    v /= 1000.0;
    ++i;
  }
  return fmt::format("{} {}", three_digits(v), units[i]);
}

}  // namespace

std::string format_duration_ns(std::int64_t ns) {
  const double v = static_cast<double>(ns);
  const double a = std::fabs(v);
  if (a < 1e3) return fmt::format("{} ns", ns);
  if (a < 999.5e3) return fmt::format("{} µs", three_digits(v / 1e3));
  if (a < 999.5e6) return fmt::format("{} ms", three_digits(v / 1e6));
  return fmt::format("{} s", three_digits(v / 1e9));
}

std::string format_bytes(double bytes) {
  if (std::isfinite(bytes) && bytes >= 0 && bytes < 999.5) return fmt::format("{:.0f} B", bytes);
  return scaled(bytes, {"B", "KB", "MB", "GB", "TB"});
}

std::string format_bandwidth_gbps(double gbps) { return scaled(gbps * 1e6, {"KB/s", "MB/s", "GB/s", "TB/s", "PB/s"}); }

std::string format_flop_rate_gflops(double gflops) {
  return scaled(gflops * 1e3, {"MFLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", "EFLOP/s"});
}

std::string format_pct(double pct) { return std::isfinite(pct) ? fmt::format("{:.1f}%", pct) : "-"; }

std::string format_speedup(double speedup) {
  return std::isfinite(speedup) && speedup > 0 ? fmt::format("{:.2f}x", speedup) : "-";
}

}  // namespace opprof
