#pragma once
// `opprof report profile.db`: a fixed-width text summary of a profile database for a terminal.
#include <cstdint>
#include <string>
#include <string_view>

#include "opprof/report/summary.hpp"
#include "opprof/store/profile_reader.hpp"

namespace opprof {

// The report as text, ending in a newline: capture facts and warnings, kernel time and coverage by
// attribution path, top operators and modules with their bottleneck and key counters, opaque-backend
// share, the unattributed kernel time by family and reason, and ncu matching.
std::string render_terminal_report(const ProfileReader& profile, const ReportOptions& options = {});

// Layer dedup's lines of the report ("" without dedup): replayed vs propagated kernels, instances replayed
// in full and why, and the --dedup-verify deviations.
std::string dedup_section(const ProfileDedup& dedup);

// "812 ns", "12.35 us", "4.21 ms", "1.234 s".
std::string format_duration_ns(std::int64_t ns);
// text cut to width columns with "..." marking the cut: at the end, or at the start when keep_tail
// (module paths, whose last component names the layer).
std::string fit_width(std::string_view text, std::size_t width, bool keep_tail = false);

}  // namespace opprof
