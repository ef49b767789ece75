#pragma once
// `opprof report profile.db --html out.html`: one self-contained HTML page that opens offline. The page
// carries its data as one JSON blob (html_report_data) and draws it with the vendored Chart.js
// (third_party/chartjs, compiled into opprof) and its own script (html_report.js): time by operator,
// module tree and kernel family as sortable tables and bar charts, rooflines per operator and per kernel
// under the GPU's ceilings, bottleneck classes with their figures, coverage by attribution path and phase,
// the unattributed and opaque lists, and the capture's metadata.
//
// The blob's top-level keys (times in ns, shares as fractions 0..1, unknown numbers null):
//   profile, schema_version, opprof_version, capture [[label, value]], metadata {key: value}, warnings [..]
//   coverage {kernel_time_ns, kernels, attributed_ns, module_attributed_ns, opaque_ns,
//             paths [{name, ns}], phases [{name, ns}], ncu {available, rows, matched}}
//   operators, modules, families [{name, fused_ops, kernels, time_ns, time_pct, ...}]: every group, as
//             `report --json` writes its groups (write_group_lines)
//   module_tree {module_ns, no_module_ns, no_module_kernels, roots [{name, path, self_ns, inclusive_ns,
//             self_kernels, inclusive_kernels, bottleneck, children [..]}]}
//   kernels [{name, family, kernels, time_ns, counted_kernels, ncu_time_ns, dram_bytes, flops, tensor_flops,
//             fp32_flops, gflops, tensor_gflops, fp32_gflops, arithmetic_intensity}]   one per kernel name
//   ceilings {device, source, dram_gbps, fp32_gflops, tf32_gflops, bf16_gflops, fp8_gflops} or null
//   unattributed [{family, reason, kernels, time_ns}], opaque [{backend, time_ns}]
//   anomalies [{kind, count, details [..]}], match_notes [..]
//   job: null for one process; for a multi-process job report.json's `job` object (docs/report_json.md),
//             drawn as the Ranks section
#include <string>
#include <string_view>

#include "opprof/store/profile_reader.hpp"

namespace opprof {

// The page's data as one JSON document.
std::string html_report_data(const ProfileReader& profile);

// JSON made safe to sit inside <script type="application/json">: '<', '>' and '&' become \u003c, \u003e
// and \u0026 (they occur only inside strings), so no "</script>" or "<!--" from a kernel name can end or
// comment out the element, and JSON.parse reads the same text back.
std::string json_for_script_element(std::string_view json);

// Text safe inside HTML element content and attribute values (&, <, >, ", ').
std::string html_escape(std::string_view text);

// A report asset compiled into opprof (html_report.css, chart.min.js; cmake/EmbedFiles.cmake). Throws
// OutputError when this build lacks it.
std::string_view report_asset(std::string_view name);
// The vendored Chart.js as a script element, preceded by its licence in a comment, for a page to draw with.
std::string chart_js_script_element();

// The whole page.
std::string render_html_report(const ProfileReader& profile);

}  // namespace opprof
