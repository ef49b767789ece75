#include "opprof/report/diff_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "opprof/report/json_writer.hpp"
#include "opprof/report/text_table.hpp"
#include "opprof/report/units.hpp"

namespace opprof {
namespace {

int module_depth(const std::string& path) { return 1 + static_cast<int>(std::count(path.begin(), path.end(), '.')); }

// "1.52x", "added", "removed", or "-" (no time in either).
std::string change_cell(const DiffRow& r) {
  if (!r.in_base || r.base_ns == 0) return r.new_ns > 0 ? "added" : "-";
  if (!r.in_new || r.new_ns == 0) return "removed";
  return format_speedup(r.speedup());
}

std::string time_cell(bool present, std::int64_t ns) { return present ? format_duration_ns(ns) : "-"; }

void diff_table(Page& page, std::string_view title, std::string_view column, std::vector<DiffRow> rows,
                std::size_t top, bool with_bottleneck) {
  page.blank();
  const std::size_t total = rows.size();
  if (top > 0 && rows.size() > top) rows.resize(top);
  page.title(fmt::format("{} ({} of {}, by the larger kernel time)", title, rows.size(), total));
  if (rows.empty()) return;
  std::vector<std::string> names;
  for (const DiffRow& r : rows) names.push_back(r.key);
  std::vector<Column> columns = {{"base", 8}, {"new", 8}, {"speedup", 7}, {"kernels", 9}};
  if (with_bottleneck) columns.push_back({"bottleneck base -> new", 35, false, 2});
  columns = fit_columns(page.width(), std::string(column), longest_name(names), std::move(columns), 3);
  names = shorten_distinct(names, columns[0].width);
  page.raw(table_header(columns, page.style()));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const DiffRow& r = rows[i];
    const std::string bottleneck =
        r.base_bottleneck == r.new_bottleneck
            ? (r.base_bottleneck.empty() ? "-" : r.base_bottleneck)
            : fmt::format("{} -> {}", r.base_bottleneck.empty() ? "-" : r.base_bottleneck,
                          r.new_bottleneck.empty() ? "-" : r.new_bottleneck);
    page.raw(table_row(columns,
                       {names[i], time_cell(r.in_base, r.base_ns), time_cell(r.in_new, r.new_ns), change_cell(r),
                        fmt::format("{}→{}", r.base_kernels, r.new_kernels), bottleneck},
                       page.style(), 3));
  }
}

void added_removed(Page& page, const std::vector<DiffRow>& families, bool added, std::size_t top) {
  std::vector<DiffRow> rows;
  for (const DiffRow& r : families)
    if (added ? !r.in_base : !r.in_new) rows.push_back(r);
  page.blank();
  std::int64_t ns = 0;
  std::uint64_t kernels = 0;
  for (const DiffRow& r : rows) {
    ns += added ? r.new_ns : r.base_ns;
    kernels += added ? r.new_kernels : r.base_kernels;
  }
  const char* what = added ? "added (only in the new profile)" : "removed (only in the base profile)";
  if (rows.empty()) return page.title(fmt::format("Kernel families {}: none", what));
  page.title(fmt::format("Kernel families {}: {}, {} kernels, {}", what, rows.size(), kernels, format_duration_ns(ns)));
  const std::size_t shown = top > 0 ? std::min(top, rows.size()) : rows.size();
  std::vector<std::string> names;
  for (std::size_t i = 0; i < shown; ++i) names.push_back(rows[i].key);
  const std::vector<Column> columns =
      fit_columns(page.width(), "kernel family", longest_name(names), {{"kernels", 7}, {"time", 8}}, 2);
  names = shorten_distinct(names, columns[0].width);
  page.raw(table_header(columns, page.style()));
  for (std::size_t i = 0; i < shown; ++i) {
    const DiffRow& r = rows[i];
    page.raw(table_row(columns,
                       {names[i], std::to_string(added ? r.new_kernels : r.base_kernels),
                        format_duration_ns(added ? r.new_ns : r.base_ns)},
                       page.style()));
  }
  if (shown < rows.size()) page.line(fmt::format("  ... {} more", rows.size() - shown));
}

// A counter value with its unit: "41.0%", "1.20 GB", "812 ns", "3.1e+06 cycle".
std::string counter_value(double v, const std::string& unit) {
  if (unit == "%") return format_pct(v);
  if (unit == "byte") return format_bytes(v);
  if (unit == "ns") return format_duration_ns(static_cast<std::int64_t>(std::llround(v)));
  return fmt::format("{:.4g}{}{}", v, unit.empty() ? "" : " ", unit);
}

void counters(Page& page, const ProfileDiff& d) {
  page.blank();
  if (d.counters.empty()) {
    page.title("Counters that changed most: none compared (no operator with counters in both profiles)");
    return;
  }
  page.title("Counters that changed most (operators in both profiles, weighted by their share of time)");
  std::vector<std::string> names;
  for (const CounterChange& c : d.counters) names.push_back(c.op + "  " + c.metric);
  const std::vector<Column> columns =
      fit_columns(page.width(), "operator  counter", longest_name(names), {{"base", 12}, {"new", 12}}, 2);
  names = shorten_distinct(names, columns[0].width);
  page.raw(table_header(columns, page.style()));
  for (std::size_t i = 0; i < d.counters.size(); ++i) {
    const CounterChange& c = d.counters[i];
    page.raw(table_row(columns, {names[i], counter_value(c.base, c.unit), counter_value(c.next, c.unit)}, page.style()));
  }
}

// "23.7 ms→22.1 ms", or one side's time with "-" for the side without the rank.
std::string times_cell(const RankDiff& r, std::int64_t RankFigures::*figure) {
  return fmt::format("{}→{}", r.in_base ? format_duration_ns(r.base.*figure) : "-",
                     r.in_new ? format_duration_ns(r.next.*figure) : "-");
}

void ranks(Page& page, const ProfileDiff& d, std::size_t top) {
  if (d.ranks.empty()) return;
  page.blank();
  page.title(fmt::format("Ranks ({}): kernel time; communication on the GPU, on the CPU, and the GPU's exposed; base -> new",
                         d.ranks.size()));
  std::vector<std::string> names;
  for (const RankDiff& r : d.ranks) names.push_back(r.label);
  const std::vector<Column> columns = fit_columns(
      page.width(), "rank", longest_name(names),
      {{"base", 8}, {"new", 8}, {"speedup", 7}, {"GPU comm", 15}, {"CPU comm", 15}, {"exposed", 15}, {"status", 12, false, 2}},
      3);
  page.raw(table_header(columns, page.style()));
  for (const RankDiff& r : d.ranks) {
    const std::string status = r.base_status == r.new_status
                                   ? r.base_status
                                   : fmt::format("{}→{}", r.in_base ? r.base_status : "-", r.in_new ? r.new_status : "-");
    std::string change = "-";
    if (!r.in_base) change = "added";
    else if (!r.in_new) change = "removed";
    else if (std::isfinite(r.speedup())) change = format_speedup(r.speedup());
    page.raw(table_row(columns,
                       {r.label, time_cell(r.in_base, r.base.kernel_time_ns), time_cell(r.in_new, r.next.kernel_time_ns),
                        change, times_cell(r, &RankFigures::communication_ns),
                        times_cell(r, &RankFigures::cpu_communication_ns),
                        times_cell(r, &RankFigures::exposed_communication_ns), status},
                       page.style(), 3));
  }
  std::vector<RankOperatorDiff> rows;
  for (const RankOperatorDiff& r : d.rank_operators)
    if (r.row.base_ns != r.row.new_ns) rows.push_back(r);
  const std::size_t total = rows.size();
  if (top > 0 && rows.size() > top) rows.resize(top);
  page.blank();
  page.title(fmt::format("Operators per rank whose time changed most ({} of {})", rows.size(), total));
  if (rows.empty()) return;
  names.clear();
  for (const RankOperatorDiff& r : rows) names.push_back(r.rank + "  " + r.row.key);
  const std::vector<Column> op_columns = fit_columns(page.width(), "rank  operator", longest_name(names),
                                                     {{"base", 8}, {"new", 8}, {"speedup", 7}, {"kernels", 9}}, 3);
  names = shorten_distinct(names, op_columns[0].width);
  page.raw(table_header(op_columns, page.style()));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const DiffRow& r = rows[i].row;
    page.raw(table_row(op_columns,
                       {names[i], time_cell(r.in_base, r.base_ns), time_cell(r.in_new, r.new_ns), change_cell(r),
                        fmt::format("{}→{}", r.base_kernels, r.new_kernels)},
                       page.style(), 3));
  }
}

void row_fields(JsonWriter& j, const DiffRow& r) {
  j.fields({{"name", r.key}, {"in_base", r.in_base}, {"in_new", r.in_new}, {"base_ns", r.base_ns}, {"new_ns", r.new_ns}});
  j.fields({{"base_kernels", r.base_kernels}, {"new_kernels", r.new_kernels}, {"speedup", r.speedup()},
            {"base_bottleneck", JsonValue::or_null(r.base_bottleneck)},
            {"new_bottleneck", JsonValue::or_null(r.new_bottleneck)}});
}

void row_json(JsonWriter& j, const DiffRow& r) {
  j.begin_object();
  row_fields(j, r);
  j.end_object();
}

void rank_side_json(JsonWriter& j, std::string_view key, bool present, const RankFigures& f) {
  j.key(key);
  if (!present) {
    j.null();
    return;
  }
  j.begin_object();
  j.fields({{"kernels", f.kernels}, {"kernel_time_ns", f.kernel_time_ns}, {"compute_ns", f.compute_ns},
            {"communication_ns", f.communication_ns}, {"overlap_ns", f.overlap_ns}});
  j.fields({{"exposed_communication_ns", f.exposed_communication_ns}, {"cpu_communication_ns", f.cpu_communication_ns},
            {"span_ns", f.span_ns}});
  j.end_object();
}

void ranks_json(JsonWriter& j, const ProfileDiff& d) {
  j.key("ranks").begin_array();
  for (const RankDiff& r : d.ranks) {
    j.begin_object();
    j.fields({{"rank", r.label}, {"in_base", r.in_base}, {"in_new", r.in_new}, {"speedup", r.speedup()},
              {"base_status", JsonValue::or_null(r.base_status)}, {"new_status", JsonValue::or_null(r.new_status)}});
    rank_side_json(j, "base", r.in_base, r.base);
    rank_side_json(j, "new", r.in_new, r.next);
    j.end_object();
  }
  j.end_array();
  j.key("rank_operators").begin_array();
  for (const RankOperatorDiff& r : d.rank_operators) {
    j.begin_object();
    j.key("rank").string(r.rank);
    row_fields(j, r.row);
    j.end_object();
  }
  j.end_array();
}

void rows_json(JsonWriter& j, std::string_view key, const std::vector<DiffRow>& rows) {
  j.key(key).begin_array();
  for (const DiffRow& r : rows) row_json(j, r);
  j.end_array();
}

void side_json(JsonWriter& j, std::string_view key, const DiffSide& s) {
  j.key(key).begin_object();
  j.fields({{"profile", s.path}, {"kernel_time_ns", s.kernel_time_ns}, {"kernels", s.kernels}});
  j.key("gpus").strings(s.gpus);
  j.fields({{"chip", JsonValue::or_null(s.chip)}, {"has_ncu", s.has_ncu}});
  j.key("metrics").strings(s.metrics);
  j.end_object();
}

}  // namespace

std::string render_diff_text(const ProfileDiff& d, const DiffTextOptions& o) {
  Page page(o.width, o.color);
  page.title("opprof diff");
  page.fact("base", d.base.path);
  page.fact("new ", d.next.path);
  if (!d.warnings.empty()) {
    page.blank();
    for (const std::string& w : d.warnings) page.prose(page.style().yellow("warning: "), w, "         ");
  }
  page.blank();
  const double speedup = d.speedup();
  const std::string verdict = !std::isfinite(speedup) ? std::string("not comparable (no kernel time in one profile)")
                              : speedup >= 1.0        ? page.style().green(fmt::format("{} faster", format_speedup(speedup)))
                                                      : page.style().red(fmt::format("{:.2f}x slower", 1.0 / speedup));
  page.prose("", fmt::format("Kernel time {} -> {}: {} ({:+.1f}%), {} -> {} kernels",
                             format_duration_ns(d.base.kernel_time_ns), format_duration_ns(d.next.kernel_time_ns),
                             verdict, std::isfinite(d.slowdown_pct()) ? d.slowdown_pct() : 0.0, d.base.kernels,
                             d.next.kernels),
             "  ");
  diff_table(page, "Operators", "operator", d.operators, o.top, true);
  std::vector<DiffRow> modules;
  for (const DiffRow& r : d.modules)
    if (o.depth == 0 || module_depth(r.key) <= o.depth) modules.push_back(r);
  diff_table(page, o.depth > 0 ? fmt::format("Modules, inclusive time, {} levels", o.depth) : "Modules, inclusive time",
             "module", std::move(modules), o.top, false);
  diff_table(page, "Kernel families", "kernel family", d.families, o.top, false);
  added_removed(page, d.families, true, o.top);
  added_removed(page, d.families, false, o.top);
  counters(page, d);
  ranks(page, d, o.top);
  return std::move(page).str();
}

std::string render_diff_json(const ProfileDiff& d) {
  JsonWriter j;
  j.begin_object();
  j.fields({{"format", "opprof-diff"}, {"format_version", 1}});
  side_json(j, "base", d.base);
  side_json(j, "new", d.next);
  j.fields({{"speedup", d.speedup()}, {"slowdown_pct", d.slowdown_pct()}});
  j.key("warnings").strings(d.warnings);
  rows_json(j, "operators", d.operators);
  rows_json(j, "modules", d.modules);
  rows_json(j, "families", d.families);
  j.key("counters").begin_array();
  for (const CounterChange& c : d.counters) {
    j.begin_object();
    j.fields({{"operator", c.op}, {"metric", c.metric}, {"unit", c.unit}, {"base", c.base}, {"new", c.next},
              {"score", c.score}});
    j.end_object();
  }
  j.end_array();
  ranks_json(j, d);
  j.end_object();
  return j.str() + "\n";
}

}  // namespace opprof
