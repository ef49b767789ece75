#pragma once
// The HTML report of `opprof optimize`: one self-contained page, from optimize_report.json, of what was
// tried, applied and rejected and why, with the numerics of each step. It shows the run (workload,
// compile mode, train or inference, the precision allowed, the tolerances), the baseline and final
// figures, a Chart.js bar chart of profiled kernel time and wall time (median with its interquartile
// range) for the baseline and after each measured trial, every trial with its verdict, reason, speedups
// and numerics against its bound, the findings with their evidence, the speedup split into the
// numerics-preserving part and the precision factor, and the saved code.
//
// The tables are written as HTML, so they read without JavaScript; only the charts are drawn by a script,
// from a JSON blob in <script type="application/json" id="opprof-optimize-data">:
//   points [{label, verdict, kernel_us, kernels, wall_median_ms, wall_p25_ms, wall_p75_ms}]
// one per measured state (the baseline first, verdict "baseline"), unknown figures null. The page uses the
// style and the Chart.js of `opprof report --html` (html.hpp); every chart is registered in
// window.opprofCharts by its canvas id, and <body data-opprof-ready="1"> says the page is drawn.
#include <string>
#include <string_view>

#include "opprof/report/optimize_report.hpp"

namespace opprof {

inline constexpr std::string_view kOptimizeHtmlFile = "optimize_report.html";

// The page. saved_code_text: the contents of the saved opprof_optimized.py (shown under its path), or
// empty when it was not found.
std::string render_optimize_html(const OptimizeReport& report, std::string_view saved_code_text);

// Reads report_json (optimize_report.json) and the saved code beside it (the file named by its
// saved_code, looked up in the report's own directory, which is where the driver writes both), and
// writes the page to html_path atomically: the old file or the whole new one, never a part. Throws
// InputError naming report_json when it is unreadable or lacks a field, OutputError when the page cannot
// be written.
void write_optimize_html(const std::string& report_json, const std::string& html_path);

}  // namespace opprof
