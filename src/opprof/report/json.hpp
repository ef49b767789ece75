#pragma once
// `opprof report --json profile.db`: the report's summary as one JSON object, for scripts and CI.
// docs/report_json.md describes every key; kJsonReportFormatVersion changes when one changes meaning.
#include <string>
#include <string_view>
#include <vector>

#include "opprof/report/json_writer.hpp"
#include "opprof/report/summary.hpp"
#include "opprof/store/profile_reader.hpp"

namespace opprof {

// key: an array of the groups' objects as in "operators" above; the HTML report's blob writes them too.
void write_group_lines(JsonWriter& j, std::string_view key, const std::vector<GroupLine>& lines);

// 1: metadata values as strings, fused_ops one string; 2: typed metadata, fused_ops a list, the module
// tree, families, source lines and phases, the bottleneck's reason and advice apart.
inline constexpr int kJsonReportFormatVersion = 2;

// The JSON document, pretty-printed, ending in a newline. Lists options.top rows per table (0: all),
// and the module tree to options.depth levels (0: all) below options.module_prefix.
std::string render_json_report(const ProfileReader& profile, const ReportOptions& options = {});

}  // namespace opprof
