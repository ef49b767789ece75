#pragma once
// `opprof report profile.db`: a text summary of a profile database for a terminal, every line within
// ReportOptions::width display columns.
#include <string>

#include "opprof/report/summary.hpp"
#include "opprof/report/text_layout.hpp"
#include "opprof/report/units.hpp"
#include "opprof/store/profile_reader.hpp"

namespace opprof {

// The report as text, ending in a newline: capture facts and warnings, kernel time and coverage by
// attribution path and phase, the table options.by selects (operators by default: per row the bottleneck
// class, its reason and what to look at next), the module tree with inclusive and self time, the
// opaque-backend share, the unattributed kernel time by family and reason, and ncu matching.
std::string render_terminal_report(const ProfileReader& profile, const ReportOptions& options = {});

}  // namespace opprof
