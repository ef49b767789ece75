#pragma once
// Humanized figures for the text reports: three significant digits and the unit that keeps the number
// between 1 and 1000 (decimal prefixes throughout, as ncu and GPU datasheets count: 1 GB = 1e9 bytes).
// Unknown values (negative for derived figures, NaN for counters) print as "-".
#include <cstdint>
#include <string>

namespace opprof {

// "812 ns", "12.3 µs", "4.21 ms", "1.23 s".
std::string format_duration_ns(std::int64_t ns);
// "512 B", "4.10 KB", "1.50 MB", "2.00 GB", "1.20 TB".
std::string format_bytes(double bytes);
// From GB/s: "850 MB/s", "348 GB/s", "1.14 TB/s".
std::string format_bandwidth_gbps(double gbps);
// From GFLOP/s: "12.0 GFLOP/s", "312 TFLOP/s".
std::string format_flop_rate_gflops(double gflops);
// A percentage: "70.0%", "-" when unknown.
std::string format_pct(double pct);
// A speedup: "1.52x", "-" when unknown.
std::string format_speedup(double speedup);

}  // namespace opprof
