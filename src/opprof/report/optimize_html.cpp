#include "opprof/report/optimize_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include "opprof/report/html.hpp"
#include "opprof/report/json_writer.hpp"
#include "opprof/util/atomic_file.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

// What html_report.css lacks for this page: verdict colours, and tables that do not sort (its headers
// look clickable).
constexpr std::string_view kPageStyle = R"css(
table.static th { cursor: default; }
.verdict.applied { background: #dcf1e1; color: #1d6a34; }
.verdict.rejected { background: #f8e1df; color: #9a2d23; }
.verdict.skipped { background: #eceef2; color: var(--muted); }
tr.applied td { background: #f2faf4; }
td ul { margin: 0; padding-left: 16px; }
#trials th { white-space: normal; vertical-align: bottom; }
#trials th, #trials td { padding: 3px 5px; }
td.rewrite { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
td.text { font-size: 12px; min-width: 160px; }
#trials .scroll, #findings .scroll, #run .scroll { max-height: none; }
.swatch { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 10px; }
)css";

// Bar colours by verdict, the same in the chart and in the legend above it.
constexpr std::pair<std::string_view, std::string_view> kVerdictColours[] = {
    {"baseline", "#2f6fd6"}, {"applied", "#3aa757"}, {"rejected", "#8c8c8c"}};

// Draws the charts from the blob: kernel time per step, and wall time with each bar's interquartile
// range as a whisker (a small plugin: Chart.js 3 has no error bars).
constexpr std::string_view kPageScript = R"js(
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('opprof-optimize-data').textContent);
  const charts = {};
  window.opprofCharts = charts;
  Chart.defaults.animation = false;  // drawn at once: screenshots and tests see the final chart
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.size = 12;
  const points = data.points;
  const labels = points.map((p) => p.label);
  const colours = points.map((p) => data.colours[p.verdict] || data.colours.rejected);
  const whiskers = {
    id: 'iqrWhiskers',
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx, y = chart.scales.y;
      chart.getDatasetMeta(0).data.forEach((bar, i) => {
        const p = points[i];
        if (p.wall_p25_ms === null || p.wall_p75_ms === null) return;
        const top = y.getPixelForValue(p.wall_p75_ms), bottom = y.getPixelForValue(p.wall_p25_ms);
        const half = Math.min(8, bar.width / 4);
        ctx.save();
        ctx.strokeStyle = '#1d2330';
        ctx.lineWidth = 1.5;
        ctx.beginPath();
        ctx.moveTo(bar.x, top); ctx.lineTo(bar.x, bottom);
        ctx.moveTo(bar.x - half, top); ctx.lineTo(bar.x + half, top);
        ctx.moveTo(bar.x - half, bottom); ctx.lineTo(bar.x + half, bottom);
        ctx.stroke();
        ctx.restore();
      });
    },
  };
  function bars(id, title, unit, values, label, extra) {
    const canvas = document.getElementById(id);
    if (!canvas) return;
    charts[id] = new Chart(canvas, {
      type: 'bar',
      data: { labels: labels, datasets: [{ label: unit, data: values, backgroundColor: colours }] },
      options: {
        plugins: { legend: { display: false }, title: { display: true, text: title },
          tooltip: { callbacks: { label: (c) => label(points[c.dataIndex]) } } },
        scales: { y: Object.assign({ beginAtZero: true, title: { display: true, text: unit } }, extra.y || {}) },
      },
      plugins: extra.plugins || [],
    });
  }
  bars('chart-kernel', 'profiled kernel time per step', 'us / step', points.map((p) => p.kernel_us),
    (p) => p.kernel_us.toFixed(1) + ' us / step, ' + p.kernels.toFixed(0) + ' kernels', {});
  const p75 = points.map((p) => p.wall_p75_ms).filter((v) => v !== null);
  bars('chart-wall', 'wall time per step: median, whisker the interquartile range', 'ms / step',
    points.map((p) => p.wall_median_ms),
    (p) => p.wall_median_ms.toFixed(3) + ' ms median (IQR ' + p.wall_p25_ms.toFixed(3) + '-' +
      p.wall_p75_ms.toFixed(3) + ')',
    { y: { suggestedMax: Math.max(...p75) }, plugins: [whiskers] });
  document.body.setAttribute('data-opprof-ready', '1');
})();
)js";

std::string fixed(double v, int digits) { return fmt::format("{:.{}f}", v, digits); }
// Three significant digits, as the text report prints errors and bounds ("1.76e-07", "0.0001").
std::string sig3(double v) { return fmt::format("{:.3g}", v); }
// As the text report: "1.062x", or "n/a" where a side was not measured.
std::string times(const std::optional<double>& v) { return v && *v != 0 ? fmt::format("{:.3f}x", *v) : "n/a"; }
std::string kernel_us(const OptimizeMeasured& m) { return m.kernel ? fixed(m.kernel->ns_per_step / 1e3, 1) : "-"; }
std::string wall_ms(const OptimizeMeasured& m) { return fixed(m.wall.median_ms, 3); }
std::string iqr_ms(const OptimizeWallTime& w) { return fixed(w.p25_ms, 3) + "-" + fixed(w.p75_ms, 3); }

std::string verdict_badge(std::string_view verdict) {
  const std::string v = html_escape(verdict);
  return fmt::format("<span class=\"badge verdict {0}\">{0}</span>", v);
}

// A column of a Table: the key its cells carry in data-col (as the report page's tables do), its header,
// and its cells' class: html_report.css's "num" (right-aligned figures) or "name" (monospace), this
// page's "rewrite" or "text", or none.
struct Column {
  std::string_view key, label, cls;
};

// A table whose cells are HTML already (escaped text, or markup around it), closed when it goes out of
// scope.
class Table {
 public:
  Table(std::string& page, std::string_view id, std::vector<Column> columns)
      : page_(page), columns_(std::move(columns)) {
    page_ += fmt::format("<div class=\"scroll\"><table class=\"static\" id=\"{}\">\n<thead><tr>", id);
    for (const Column& c : columns_)
      page_ += fmt::format("<th{}>{}</th>", c.cls == "num" ? " class=\"num\"" : "", c.label);
    page_ += "</tr></thead>\n<tbody>\n";
  }
  ~Table() { page_ += "</tbody></table></div>\n"; }
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  // attributes: the <tr>'s, escaped by the caller; cells: one per column, in order.
  void row(std::string_view attributes, const std::vector<std::string>& cells) {
    page_ += attributes.empty() ? "<tr>" : fmt::format("<tr {}>", attributes);
    std::size_t i = 0;
    for (const std::string& cell : cells) {
      const Column& c = columns_.at(i++);
      page_ += fmt::format("<td data-col=\"{}\"{}>{}</td>", c.key,
                           c.cls.empty() ? "" : fmt::format(" class=\"{}\"", c.cls), cell);
    }
    page_ += "</tr>\n";
  }

 private:
  std::string& page_;
  std::vector<Column> columns_;
};

std::string html_list(const std::vector<std::string>& items) {
  if (items.empty()) return "";
  std::string out = "<ul>";
  for (const std::string& item : items) out += "<li>" + html_escape(item) + "</li>";
  return out + "</ul>";
}

std::string agreement_text(const OptimizeAgreement& a) {
  std::string out = fmt::format("max abs {}, max rel {} ({:.0f} output tensor(s))", sig3(a.max_abs), sig3(a.max_rel),
                                a.tensors);
  if (a.grad_max_abs && a.grad_max_rel)
    out += fmt::format("; gradients max abs {}, max rel {}", sig3(*a.grad_max_abs), sig3(*a.grad_max_rel));
  if (!a.nonfinite.empty()) out += "; non-finite values in " + a.nonfinite;
  return out;
}

std::string precision_text(const OptimizeReport& r) {
  return r.allow_precision
             ? fmt::format("--allow-precision {} within max rel {:g}", *r.allow_precision, r.tolerance)
             : std::string("none allowed (numerics-preserving rewrites only)");
}

// The exact tier's bound as the driver applied it (the larger of --exact-tolerance and 10x the noise):
// each exact-tier trial that ran carries it.
std::optional<double> exact_bound(const OptimizeReport& r) {
  for (const OptimizeTrial& t : r.trials)
    if (t.tier == "exact" && t.numerics_bound) return t.numerics_bound;
  return std::nullopt;
}

std::string trial_label(std::size_t index, const OptimizeTrial& t) {
  std::string label = fmt::format("{}. {}", index + 1, t.rewrite);
  if (!t.together_with.empty()) label += " + " + join(t.together_with, " + ");
  return label;
}

void write_header(std::string& page, const OptimizeReport& r) {
  const std::optional<double> bound = exact_bound(r);
  page += fmt::format("<header>\n<h1>opprof optimize: {}</h1>\n", html_escape(r.workload));
  page += fmt::format(
      "<div class=\"sub\" id=\"run-summary\">{} &middot; {} &middot; precision: {} &middot; exact tier: max rel "
      "within {}{} &middot; precision tier: max rel within {}</div>\n</header>\n",
      html_escape(r.compile), r.train ? "training step" : "inference", html_escape(precision_text(r)),
      bound ? sig3(*bound) : fmt::format("max({:g}, 10x the FP32 noise)", r.exact_tolerance),
      bound ? fmt::format(" (the larger of {:g} and 10x the FP32 noise)", r.exact_tolerance) : "",
      fmt::format("{:g}", r.tolerance));
  constexpr std::pair<std::string_view, std::string_view> kSections[] = {
      {"result", "Result"}, {"time", "Time per step"}, {"trials", "Trials"},
      {"findings", "Findings"}, {"code", "Saved code"}, {"run", "Run"}};
  page += "<nav>";
  for (const auto& [id, title] : kSections) page += fmt::format("<a href=\"#{}\">{}</a>", id, title);
  page += "</nav>\n";
}

void write_card(std::string& page, std::string_view id, const std::string& value, std::string_view label) {
  page += fmt::format("<div class=\"card\" id=\"{}\"><div class=\"v\">{}</div><div class=\"l\">{}</div></div>\n", id,
                      value, label);
}

void write_result(std::string& page, const OptimizeReport& r) {
  page += "<section id=\"result\"><h2>Result</h2>\n";
  page += fmt::format("<p class=\"note\" id=\"applied\">Applied: {}</p>\n",
                      r.applied.empty() ? std::string("nothing paid; the model runs unchanged")
                                        : html_escape(join(r.applied, ", ")));
  page += "<div class=\"cards\">\n";
  if (r.baseline.kernel && r.final.kernel)
    write_card(page, "card-kernel", kernel_us(r.baseline) + " &rarr; " + kernel_us(r.final) + " us",
               "profiled kernel time per step, baseline &rarr; final");
  write_card(page, "card-kernel-speedup", times(r.kernel_speedup.total), "kernel time speedup");
  write_card(page, "card-wall", wall_ms(r.baseline) + " &rarr; " + wall_ms(r.final) + " ms",
             "wall time per step (median), baseline &rarr; final");
  write_card(page, "card-wall-speedup", times(r.wall_speedup.total), "wall time speedup");
  const auto applied_trials = std::count_if(r.trials.begin(), r.trials.end(),
                                            [](const OptimizeTrial& t) { return t.verdict == "applied"; });
  write_card(page, "card-trials", fmt::format("{} of {}", applied_trials, r.trials.size()), "trials applied");
  page += "</div>\n<h3>Measured states</h3>\n";
  {
    struct State {
      std::string_view key, label;
      const OptimizeMeasured& measured;
    };
    const State states[] = {{"baseline", "baseline", r.baseline},
                            {"exact_only", "numerics-preserving steps only", r.exact_only},
                            {"final", "final (every applied step)", r.final}};
    Table t(page, "table-states",
            {{"state", "state", ""}, {"kernel_us", "kernel us / step", "num"}, {"kernels", "kernels / step", "num"},
             {"kernel_steps", "profiled steps", "num"}, {"wall_median_ms", "wall ms / step (median)", "num"},
             {"wall_iqr_ms", "IQR ms", "num"}, {"wall_range_ms", "range ms", "num"},
             {"wall_steps", "timed steps", "num"}, {"clock", "clock", ""}});
    for (const State& s : states) {
      const OptimizeMeasured& m = s.measured;
      t.row(fmt::format("data-key=\"{}\"", s.key),
            {std::string(s.label), kernel_us(m), m.kernel ? fixed(m.kernel->kernels_per_step, 0) : "-",
             m.kernel ? fixed(m.kernel->steps, 0) : "-", wall_ms(m), iqr_ms(m.wall),
             fixed(m.wall.min_ms, 3) + "-" + fixed(m.wall.max_ms, 3), fixed(m.wall.steps, 0),
             html_escape(m.wall.clock)});
    }
  }
  page +=
      "<h3>Speedup split</h3>\n<p class=\"note\">The total speedup is the numerics-preserving steps' times the "
      "precision steps' factor; precision's share is the precision steps' fraction of log(total speedup).</p>\n";
  {
    struct Split {
      std::string_view key, label;
      const OptimizeSpeedupSplit& split;
    };
    const Split splits[] = {{"kernel", "profiled kernel time", r.kernel_speedup},
                            {"wall", "wall time", r.wall_speedup}};
    Table t(page, "table-split",
            {{"measure", "measure", ""}, {"total", "total", "num"}, {"exact_only", "numerics-preserving", "num"},
             {"precision_factor", "precision factor", "num"}, {"precision_share", "precision's share", "num"}});
    for (const Split& s : splits) {
      const OptimizeSpeedupSplit& x = s.split;
      t.row(fmt::format("data-key=\"{}\"", s.key),
            {std::string(s.label), times(x.total), times(x.exact_only), times(x.precision_factor),
             x.precision_share ? fmt::format("{:.0f} %", 100 * *x.precision_share) : "n/a"});
    }
  }
  page += "</section>\n";
}

// The chart's blob: the baseline and every trial that was measured, in order.
std::string chart_data(const OptimizeReport& r) {
  JsonWriter j(0);
  j.begin_object().key("colours").begin_object();
  for (const auto& [verdict, colour] : kVerdictColours) j.key(verdict).string(colour);
  j.end_object().key("points").begin_array();
  auto point = [&](const std::string& label, std::string_view verdict, const OptimizeMeasured& m) {
    constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();  // written as null
    j.begin_object();
    j.fields({{"label", label}, {"verdict", verdict},
              {"kernel_us", m.kernel ? m.kernel->ns_per_step / 1e3 : kUnknown},
              {"kernels", m.kernel ? m.kernel->kernels_per_step : kUnknown}, {"wall_median_ms", m.wall.median_ms},
              {"wall_p25_ms", m.wall.p25_ms}, {"wall_p75_ms", m.wall.p75_ms}});
    j.end_object();
  };
  point("baseline", "baseline", r.baseline);
  for (std::size_t i = 0; i < r.trials.size(); ++i)
    if (r.trials[i].measured) point(trial_label(i, r.trials[i]), r.trials[i].verdict, *r.trials[i].measured);
  j.end_array().end_object();
  return j.str();
}

void write_time_chart(std::string& page, const OptimizeReport& r) {
  page +=
      "<section id=\"time\"><h2>Time per step</h2>\n<p class=\"note\">The baseline and each measured trial, "
      "numbered as in the trials table. Each trial runs on top of the rewrites applied before it; a rejected one "
      "is dropped before the next.";
  for (const auto& [verdict, colour] : kVerdictColours)
    page += fmt::format("<span class=\"swatch\" style=\"background:{}\"></span>{}", colour, verdict);
  page += "</p>\n<div class=\"charts\">\n";
  if (r.baseline.kernel) page += "<div class=\"chart\"><canvas id=\"chart-kernel\"></canvas></div>\n";
  page += "<div class=\"chart\"><canvas id=\"chart-wall\"></canvas></div>\n</div>\n";
  if (!r.baseline.kernel)
    page += "<p class=\"note\" id=\"no-kernel-time\">No profiled kernel time: the run had no GPU.</p>\n";
  std::vector<std::string> unmeasured;
  for (std::size_t i = 0; i < r.trials.size(); ++i)
    if (!r.trials[i].measured) unmeasured.push_back(trial_label(i, r.trials[i]) + " (" + r.trials[i].verdict + ")");
  if (!unmeasured.empty())
    page += fmt::format("<p class=\"note\" id=\"unmeasured\">Not measured: {}.</p>\n",
                        html_escape(join(unmeasured, ", ")));
  page += "</section>\n";
}

// The numerics cells of a trial: errors of the outputs (and of the gradients where the run had them),
// as the text report prints them.
std::vector<std::string> numerics_cells(const std::optional<OptimizeAgreement>& a, bool gradients) {
  if (!a) return std::vector<std::string>(gradients ? 4 : 2, "-");
  std::string max_rel = sig3(a->max_rel);
  if (!a->nonfinite.empty()) max_rel += " (non-finite values in " + html_escape(a->nonfinite) + ")";
  std::vector<std::string> cells = {sig3(a->max_abs), max_rel};
  if (gradients) {
    cells.push_back(a->grad_max_abs ? sig3(*a->grad_max_abs) : "-");
    cells.push_back(a->grad_max_rel ? sig3(*a->grad_max_rel) : "-");
  }
  return cells;
}

void write_trials(std::string& page, const OptimizeReport& r) {
  page +=
      "<section id=\"trials\"><h2>Trials</h2>\n<p class=\"note\">Every rewrite tried, in order, each on top of "
      "those applied before it: its verdict and why, the change it made, its time and speedup against the state "
      "before it, and its numerics against the eager FP32 reference (max abs and max rel error: the max "
      "absolute error over the largest reference magnitude) within its tier's bound on max rel.</p>\n";
  const bool gradients = std::any_of(r.trials.begin(), r.trials.end(), [](const OptimizeTrial& t) {
    return t.numerics && t.numerics->grad_max_abs;
  });
  std::vector<Column> columns = {
      {"index", "#", "num"},         {"rewrite", "rewrite", "rewrite"},   {"tier", "tier", ""},
      {"mechanism", "mechanism", ""}, {"verdict", "verdict", ""},          {"reason", "reason", "text"},
      {"changes", "change", "text"},  {"kernel_us", "kernel us / step", "num"},
      {"kernel_speedup", "kernel speedup", "num"}, {"wall_ms", "wall ms / step: median (IQR)", "num"},
      {"wall_speedup", "wall speedup", "num"},     {"max_abs", "max abs", "num"}, {"max_rel", "max rel", "num"}};
  if (gradients)
    columns.insert(columns.end(), {{"grad_max_abs", "gradients max abs", "num"},
                                   {"grad_max_rel", "gradients max rel", "num"}});
  columns.push_back({"bound", "bound (max rel)", "num"});
  {
    Table t(page, "table-trials", std::move(columns));
    for (std::size_t i = 0; i < r.trials.size(); ++i) {
      const OptimizeTrial& trial = r.trials[i];
      std::string rewrite = html_escape(trial.rewrite);
      if (!trial.together_with.empty())
        rewrite += "<br>together with " + html_escape(join(trial.together_with, ", "));
      const OptimizeMeasured* m = trial.measured ? &*trial.measured : nullptr;
      std::vector<std::string> cells = {std::to_string(i + 1),
                                        rewrite,
                                        html_escape(trial.tier),
                                        html_escape(trial.mechanism),
                                        verdict_badge(trial.verdict),
                                        html_escape(trial.reason),
                                        html_list(trial.changes),
                                        m ? kernel_us(*m) : "-",
                                        times(trial.kernel_speedup),
                                        m ? wall_ms(*m) + " (" + iqr_ms(m->wall) + ")" : "-",
                                        times(trial.wall_speedup)};
      for (std::string& cell : numerics_cells(trial.numerics, gradients)) cells.push_back(std::move(cell));
      cells.push_back(trial.numerics_bound ? sig3(*trial.numerics_bound) : "-");
      t.row(fmt::format("class=\"{0}\" data-key=\"{1}\" data-rewrite=\"{2}\" data-verdict=\"{0}\"",
                        html_escape(trial.verdict), i + 1, html_escape(trial.rewrite)),
            cells);
    }
  }
  page += "</section>\n";
}

void write_findings(std::string& page, const OptimizeReport& r) {
  page +=
      "<section id=\"findings\"><h2>Findings</h2>\n<p class=\"note\">What the profile's evidence showed, and the "
      "rewrite each finding proposes.</p>\n";
  {
    Table t(page, "table-findings",
            {{"rule", "rule", "name"}, {"candidate", "candidate rewrite", "name"}, {"evidence", "evidence", ""}});
    for (const OptimizeFinding& f : r.findings)
      t.row(fmt::format("data-key=\"{}\"", html_escape(f.rule)),
            {html_escape(f.rule), f.rewrite ? html_escape(*f.rewrite) : "no rewrite (a diagnosis)",
             html_list(f.evidence)});
  }
  page += "</section>\n";
}

void write_code(std::string& page, const OptimizeReport& r, std::string_view saved_code_text) {
  page += "<section id=\"code\"><h2>Saved code</h2>\n";
  if (r.saved_code.empty()) {
    page += "<p class=\"note\">No code was saved.</p>\n</section>\n";
    return;
  }
  page += fmt::format(
      "<p class=\"note\"><code>{}</code>: <code>optimize(model)</code> applies the kept rewrites and returns the "
      "model to call.</p>\n",
      html_escape(r.saved_code));
  if (saved_code_text.empty())
    page += "<p class=\"note\" id=\"saved-code-missing\">The file was not found beside the report.</p>\n";
  else
    page += fmt::format("<pre id=\"saved-code\"><code>{}</code></pre>\n", html_escape(saved_code_text));
  page += "</section>\n";
}

void write_run(std::string& page, const OptimizeReport& r) {
  page += "<section id=\"run\"><h2>Run</h2>\n";
  {
    Table t(page, "table-run", {{"fact", "fact", ""}, {"value", "value", "name"}});
    auto fact = [&](std::string_view key, std::string_view label, const std::string& value) {
      t.row(fmt::format("data-key=\"{}\"", key), {std::string(label), html_escape(value)});
    };
    fact("workload", "workload", r.workload);
    fact("compile", "compile mode", r.compile);
    fact("step", "step", r.train ? "training (outputs and gradients checked)" : "inference");
    fact("precision", "precision allowed", precision_text(r));
    fact("tolerance", "precision tier: max rel", fmt::format("{:g}", r.tolerance));
    fact("exact_tolerance", "exact tier: least bound on max rel", fmt::format("{:g}", r.exact_tolerance));
    if (const std::optional<double> bound = exact_bound(r))
      fact("exact_bound", "exact tier: bound applied", sig3(*bound));
    fact("noise", "FP32 noise (the unrewritten model compiled, against eager)", agreement_text(r.noise));
    fact("evidence_profile", "evidence profile", r.evidence_profile);
    if (r.baseline.kernel) fact("baseline_database", "baseline kernel profile", r.baseline.kernel->database);
    if (r.final.kernel) fact("final_database", "final kernel profile", r.final.kernel->database);
  }
  page += "</section>\n";
}

}  // namespace

std::string render_optimize_html(const OptimizeReport& r, std::string_view saved_code_text) {
  std::string page;
  page.reserve(256 * 1024);
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += fmt::format("<title>opprof optimize: {}</title>\n<style>\n", html_escape(r.workload));
  page += report_asset("html_report.css");
  page += kPageStyle;
  page += "</style>\n</head>\n<body>\n";
  write_header(page, r);
  page += "<main>\n";
  write_result(page, r);
  write_time_chart(page, r);
  write_trials(page, r);
  write_findings(page, r);
  write_code(page, r, saved_code_text);
  write_run(page, r);
  page += "</main>\n<script type=\"application/json\" id=\"opprof-optimize-data\">";
  page += json_for_script_element(chart_data(r));
  page += "</script>\n";
  page += chart_js_script_element();
  page += "<script>";
  page += kPageScript;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

void write_optimize_html(const std::string& report_json, const std::string& html_path) {
  const OptimizeReport report = read_optimize_report(report_json);
  std::string saved_code_text;
  if (!report.saved_code.empty()) {
    const std::filesystem::path beside =
        std::filesystem::path(report_json).parent_path() / std::filesystem::path(report.saved_code).filename();
    std::error_code ec;
    if (std::filesystem::is_regular_file(beside, ec)) saved_code_text = read_file(beside.string());
  }
  write_file_atomically(html_path, render_optimize_html(report, saved_code_text));
}

}  // namespace opprof
