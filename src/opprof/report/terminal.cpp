#include "opprof/report/terminal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "opprof/report/job.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// A counter cell: "41.0", "-" when unknown.
std::string counter_cell(double pct) { return std::isfinite(pct) ? fmt::format("{:.1f}", pct) : "-"; }

void bottleneck_lines(Page& page, const GroupStats& g) {
  if (g.bottleneck_why.empty()) return;
  const BottleneckText t = split_bottleneck_why(g.bottleneck_why);
  const Style& s = page.style();
  if (!t.reason.empty()) page.prose(s.dim("      why  "), t.reason, "           ");
  if (!t.advice.empty()) page.prose(s.dim("      next "), t.advice, "           ");
}

// A table of groups (operators, families, source lines, phases): time and share, and where the profile
// has counters the bottleneck class, key counters, DRAM bandwidth and FLOP rate, with the reason and the
// advice under each row.
void group_table(Page& page, std::string_view title, std::string_view column, const std::vector<GroupLine>& lines,
                 std::size_t total, bool with_counters) {
  page.blank();
  if (total == 0) {
    page.title(fmt::format("{}: none in this profile", title));
    return;
  }
  page.title(fmt::format("{} ({} of {}, by kernel time)", title, lines.size(), total));
  std::vector<std::string> names;
  for (const GroupLine& l : lines) names.push_back(l.stats.key.empty() ? "(none)" : l.stats.key);
  std::vector<Column> columns = {{"kernels", 7}, {"time", 8}, {"share", 6}};
  if (with_counters)
    columns.insert(columns.end(), {{"bottleneck", 17, false, 2}, {"SM%", 5}, {"DRAM%", 5}, {"tens%", 5},
                                   {"occ%", 5}, {"DRAM BW", 9}, {"FLOP/s", 12}});
  columns = fit_columns(page.width(), std::string(column), longest_name(names), std::move(columns), 3);
  names = shorten_distinct(names, columns[0].width);
  page.raw(table_header(columns, page.style()));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const GroupLine& l = lines[i];
    const GroupStats& g = l.stats;
    page.raw(table_row(columns,
                       {names[i], std::to_string(g.kernels), format_duration_ns(g.time_ns), format_pct(l.time_pct),
                        g.bottleneck.empty() ? "-" : shorten_middle(g.bottleneck, 17), counter_cell(l.counters.sm_pct),
                        counter_cell(l.counters.dram_pct), counter_cell(l.counters.tensor_pct),
                        counter_cell(l.counters.occupancy_pct), format_bandwidth_gbps(g.dram_bandwidth_gbps),
                        format_flop_rate_gflops(g.gflops)},
                       page.style(), 4));
    if (!g.fused_ops.empty()) {
      // One op per word, so that the list wraps between ops.
      std::vector<std::string> ops;
      for (std::string_view op : split(g.fused_ops, ',')) ops.emplace_back(trim(op));
      page.prose("      fuses ", join(ops, ", "), "            ");
    }
    bottleneck_lines(page, g);
  }
}

// The module tree: the largest nodes down to the depth, in tree order, each with inclusive and self time.
void module_tree_table(Page& page, const ReportSummary& s, const ReportOptions& o) {
  const ModuleTree& tree = s.module_tree;
  const Coverage& c = s.coverage;
  page.blank();
  std::vector<const ModuleNode*> nodes = flatten_module_tree(tree, o.depth, o.module_prefix);
  const std::size_t reachable = nodes.size();
  if (o.top > 0 && nodes.size() > o.top) {
    // The top nodes by inclusive time; a parent holds at least its children's time, so the tree stays whole.
    std::vector<const ModuleNode*> by_time = nodes;
    std::stable_sort(by_time.begin(), by_time.end(),
                     [](const ModuleNode* a, const ModuleNode* b) { return a->inclusive_ns > b->inclusive_ns; });
    by_time.resize(o.top);
    std::erase_if(nodes, [&](const ModuleNode* n) { return std::find(by_time.begin(), by_time.end(), n) == by_time.end(); });
  }
  const std::string depth = o.depth > 0 ? fmt::format("{} levels", o.depth) : std::string("all levels");
  const std::string scope = o.module_prefix.empty() ? std::string() : fmt::format(" under {}", o.module_prefix);
  if (tree.nodes == 0) {
    page.title("Module tree: no kernel ran inside a module");
  } else if (reachable == 0) {
    page.title(fmt::format("Module tree: no module {}", o.module_prefix));
  } else {
    page.title(fmt::format("Module tree{} ({} of {} modules, {}; inclusive and self kernel time)", scope,
                           nodes.size(), reachable, depth));
    const int base = nodes.front()->depth;
    std::vector<std::string> names;
    for (const ModuleNode* n : nodes)
      names.push_back(std::string(2 * static_cast<std::size_t>(n->depth - base), ' ') +
                      (n->depth == base ? n->path : n->name));
    std::vector<Column> columns = fit_columns(
        page.width(), "module", longest_name(names),
        {{"kernels", 7}, {"inclusive", 9}, {"share", 6}, {"self", 8}, {"bottleneck (self)", 17, false, 2}}, 3);
    page.raw(table_header(columns, page.style()));
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const ModuleNode& n = *nodes[i];
      const std::size_t indent = 2 * static_cast<std::size_t>(n.depth - base);
      const std::size_t room = columns[0].width > indent ? columns[0].width - indent : 1;
      page.raw(table_row(columns,
                         {std::string(indent, ' ') + shorten_middle(names[i].substr(indent), room),
                          std::to_string(n.inclusive_kernels), format_duration_ns(n.inclusive_ns),
                          format_pct(c.pct(n.inclusive_ns)), n.self_ns > 0 ? format_duration_ns(n.self_ns) : "-",
                          n.bottleneck.empty() ? "-" : n.bottleneck},
                         page.style(), 5));
    }
  }
  if (tree.no_module_kernels > 0)
    page.line(fmt::format("  not in any module: {} in {} ({}), kept apart from the tree",
                          format_duration_ns(tree.no_module_ns), plural(tree.no_module_kernels, "kernel", "kernels"),
                          format_pct(c.pct(tree.no_module_ns))));
}

void header(Page& page, const ReportSummary& s) {
  auto meta = [&](const std::string& key) {
    auto it = s.metadata.find(key);
    return it == s.metadata.end() ? std::string() : it->second;
  };
  page.title("opprof profile " + s.path);
  page.line(fmt::format("  written {} by opprof {} (schema {})", meta("created_at").empty() ? "?" : meta("created_at"),
                        meta("opprof_version").empty() ? "?" : meta("opprof_version"), s.schema_version));
  std::vector<std::string> capture;
  if (!meta("timeline.source").empty()) capture.push_back("source " + meta("timeline.source"));
  for (const auto& [key, value] : s.metadata)
    if (starts_with(key, "timeline.device.") && ends_with(key, ".name"))
      capture.push_back(fmt::format("GPU {} {}", key.substr(16, key.size() - 16 - 5), value));
  if (!capture.empty()) page.line("  capture: " + join(capture, ", "));
  // The caller's own facts (inputs, options, timings), except those the line above already shows. Of
  // capture.json's many facts only the few that explain the numbers are shown; the database has them all.
  static const char* const kCaptureShown[] = {"capture.versions.torch", "capture.compile", "capture.train",
                                              "capture.window", "capture.sm_clock.before_warmup.mhz",
                                              "capture.sm_clock.after_measured.mhz", "capture.status"};
  for (const auto& [key, value] : s.metadata) {
    if (key == "schema_version" || key == "created_at" || key == "opprof_version" || starts_with(key, "timeline.") ||
        starts_with(key, "ncu.") || starts_with(key, "note.") || starts_with(key, "warning.") ||
        starts_with(key, "dedup."))
      continue;
    if (starts_with(key, "capture.") &&
        std::none_of(std::begin(kCaptureShown), std::end(kCaptureShown), [&](const char* k) { return key == k; }))
      continue;
    page.fact(key, value);
  }
  if (!meta("ncu.path").empty()) page.fact("ncu", meta("ncu.path"));
  if (!s.warnings.empty()) {
    page.blank();
    for (const std::string& w : s.warnings) page.prose(page.style().yellow("warning: "), w, "         ");
  }
}

void coverage(Page& page, const Coverage& c) {
  page.blank();
  page.title(fmt::format("Kernel time {} in {}", format_duration_ns(c.kernel_time_ns),
                         plural(c.kernels, "kernel", "kernels")));
  page.line(fmt::format("  attributed to an operator   {:>5.1f}%", c.pct(c.attributed_ns)));
  page.line(fmt::format("  attributed to a module      {:>5.1f}%", c.pct(c.module_attributed_ns)));
  std::string backends;
  for (const auto& [backend, ns] : c.opaque_backends)
    backends += fmt::format("{}{} {:.1f}%", backends.empty() ? "  (" : ", ", backend, c.pct(ns));
  if (!backends.empty()) backends += ")";
  page.line(fmt::format("  inside opaque backends      {:>5.1f}%{}", c.pct(c.opaque_ns), backends));
  page.line(fmt::format("  by path: correlation {:.1f}%  enclosure {:.1f}%  fusion {:.1f}%  none {:.1f}%",
                        c.pct(c.by_path_ns[static_cast<int>(AttributionPath::kCorrelation)]),
                        c.pct(c.by_path_ns[static_cast<int>(AttributionPath::kEnclosure)]),
                        c.pct(c.by_path_ns[static_cast<int>(AttributionPath::kFusion)]),
                        c.pct(c.by_path_ns[static_cast<int>(AttributionPath::kNone)])));
  page.line(fmt::format("  by phase: forward {:.1f}%  backward {:.1f}%  optimizer {:.1f}%  other {:.1f}%",
                        c.pct(c.by_phase_ns[static_cast<int>(Phase::kForward)]),
                        c.pct(c.by_phase_ns[static_cast<int>(Phase::kBackward)]),
                        c.pct(c.by_phase_ns[static_cast<int>(Phase::kOptimizer)]),
                        c.pct(c.by_phase_ns[static_cast<int>(Phase::kOther)])));
  if (const std::int64_t comm = c.by_phase_ns[static_cast<int>(Phase::kCommunication)]; comm > 0)
    page.line(fmt::format("  communication {:.1f}%", c.pct(comm)));
}

// Every kernel that attribution could not place, grouped, with the reason.
void unattributed(Page& page, const Coverage& c, const ReportOptions& o) {
  page.blank();
  std::int64_t unattributed_ns = 0;
  for (const UnattributedGroup& u : c.unattributed) unattributed_ns += u.time_ns;
  if (c.unattributed.empty()) {
    page.title("Unattributed kernel time: none");
    return;
  }
  page.title(fmt::format("Unattributed kernel time {} ({:.1f}%) in {}", format_duration_ns(unattributed_ns),
                         c.pct(unattributed_ns), plural(c.unattributed.size(), "group", "groups")));
  const std::size_t shown = o.unattributed == 0 ? c.unattributed.size() : std::min(o.unattributed, c.unattributed.size());
  // Family and reason share what the three figures leave.
  const std::size_t figures = 2 + 8 + 9 + 7;
  const std::size_t text = page.width() > figures + 16 ? page.width() - figures : 16;
  const std::size_t family_w = std::max<std::size_t>(8, text / 2), reason_w = std::max<std::size_t>(8, text - family_w - 1);
  std::vector<std::string> families;
  for (std::size_t i = 0; i < shown; ++i) families.push_back(c.unattributed[i].family);
  families = shorten_distinct(families, family_w);
  const std::vector<Column> columns = {{"family", family_w, false, 0}, {"reason", reason_w, false},
                                       {"kernels", 7}, {"time", 8}, {"share", 6}};
  page.raw(table_header(columns, page.style()));
  for (std::size_t i = 0; i < shown; ++i) {
    const UnattributedGroup& u = c.unattributed[i];
    page.raw(table_row(columns,
                       {families[i], shorten_middle(u.reason, reason_w), std::to_string(u.kernels),
                        format_duration_ns(u.time_ns), format_pct(c.pct(u.time_ns))},
                       page.style()));
  }
  if (shown < c.unattributed.size()) {
    std::int64_t rest = 0;
    for (std::size_t i = shown; i < c.unattributed.size(); ++i) rest += c.unattributed[i].time_ns;
    const std::size_t left = c.unattributed.size() - shown;
    page.line(fmt::format("  ... {} more {}, {} ({:.1f}%)", left, left == 1 ? "group" : "groups",
                          format_duration_ns(rest), c.pct(rest)));
  }
}

void anomalies_and_ncu(Page& page, const ReportSummary& s, const ProfileReader& profile) {
  const Coverage& c = s.coverage;
  // Choices the engine made on its own: the figures above rest on them.
  if (!s.anomalies.empty()) {
    page.blank();
    page.title("Anomalies (table anomalies): choices the inputs left open");
    for (const ProfileAnomaly& a : s.anomalies) {
      page.line(fmt::format("  {} x{}", a.kind, a.count));
      if (!a.details.empty()) page.line("    " + a.details.front());
      if (a.count > 1) page.line(fmt::format("    ... {} more", a.count - 1));
    }
  }
  page.blank();
  if (!c.has_ncu) {
    page.title("ncu: no counters in this profile (timeline only)");
    return;
  }
  const std::string identity =
      profile.meta("ncu.used_mangled_names") == "true" ? "exact mangled names" : "base name + grid + block";
  const std::string other_config =
      c.ncu_launch_config_differs == 0 ? std::string()
      : c.ncu_strict_launch_config
          ? fmt::format(", {} of another launch configuration refused", c.ncu_launch_config_differs)
          : fmt::format(", {} of them of another launch configuration", c.ncu_launch_config_differs);
  page.line(fmt::format("ncu: {}, {} matched to kernels ({}{})", plural(c.ncu_rows, "row", "rows"), c.ncu_matched,
                        identity, other_config));
  page.line(fmt::format("  {} matched no kernel; {} without counters", plural(c.ncu_unmatched_rows, "row", "rows"),
                        plural(c.ncu_unmatched_kernels, "kernel", "kernels")));
  constexpr std::size_t kNotesShown = 5;
  for (std::size_t i = 0; i < s.match_notes.size() && i < kNotesShown; ++i) page.line("  " + s.match_notes[i]);
  if (s.match_notes.size() > kNotesShown)
    page.line(fmt::format("  ... {} more match notes (table match_notes)", s.match_notes.size() - kNotesShown));
}

// Layer dedup's lines (none without dedup): replayed vs propagated kernels, instances replayed in full
// and why, and the --dedup-verify deviations.
void dedup_lines(Page& page, const ProfileDedup& d) {
  if (!d.active) return;
  page.blank();
  page.line(fmt::format("dedup {} ({}): {} of {} kernels replayed, {} took a representative's counters "
                        "(kernel_metrics.counters_from); {} classes, {} instances, {} replayed in full",
                        d.mode, d.selection, d.kernels_replayed, d.kernels, d.kernels_propagated, d.classes,
                        d.instances, d.instances_in_full));
  if (d.kernels_without_source > 0)
    page.line(fmt::format("  {} duplicate kernels without counters: their representative's kernel got no ncu row",
                          d.kernels_without_source));
  if (d.kernels_other_work > 0)
    page.line(fmt::format("  {} duplicate kernels took the counters of a launch of their configuration that did other "
                          "work (pass A durations; ncu --launch-count {} reached none of theirs)",
                          d.kernels_other_work, d.launch_count));
  constexpr std::size_t kShown = 3;
  for (std::size_t i = 0; i < d.in_full.size() && i < kShown; ++i)
    page.line(fmt::format("  {} ({}): {}", d.in_full[i].instance, d.in_full[i].class_type, d.in_full[i].reason));
  if (d.in_full.size() > kShown) page.line(fmt::format("  ... {} more (table dedup_instances)", d.in_full.size() - kShown));
  if (d.verify_deviation.empty()) return;
  page.line(fmt::format("  --dedup-verify {}: duplicates replayed in full vs their representative, per metric "
                        "(duration-weighted median |relative deviation|, max):",
                        d.verify));
  std::vector<std::string> metrics;
  for (const auto& v : d.verify_deviation) metrics.push_back(v.metric);
  const std::vector<Column> columns =
      fit_columns(page.width(), "metric", longest_name(metrics), {{"median", 8}, {"max", 9}, {"kernels", 7}}, 3);
  metrics = shorten_distinct(metrics, columns[0].width);
  page.raw(table_header(columns, page.style()));
  for (std::size_t i = 0; i < d.verify_deviation.size(); ++i) {
    const auto& v = d.verify_deviation[i];
    page.raw(table_row(columns,
                       {metrics[i], fmt::format("{:.2f} %", 100 * v.median_rel), fmt::format("{:.2f} %", 100 * v.max_rel),
                        std::to_string(v.pairs)},
                       page.style()));
  }
}

}  // namespace

std::string render_terminal_report(const ProfileReader& profile, const ReportOptions& options) {
  const ReportSummary s = summarize_profile(profile, options);
  Page page(options.width, options.color);
  header(page, s);
  coverage(page, s.coverage);
  job_section(page, profile);
  switch (options.by) {
    case ReportBy::kOperator:
      group_table(page, "Top operators", "operator", s.operators, s.operator_count, true);
      break;
    case ReportBy::kFamily:
      group_table(page, "Top kernel families", "kernel family", s.families, s.family_count, true);
      break;
    case ReportBy::kSourceLine:
      group_table(page, "Top source lines", "source line", s.source_lines, s.source_line_count, false);
      break;
    case ReportBy::kPhase:
      group_table(page, "Phases", "phase", s.phases, s.phases.size(), false);
      break;
    case ReportBy::kModule:
      break;  // the tree below is the table
  }
  module_tree_table(page, s, options);
  unattributed(page, s.coverage, options);
  anomalies_and_ncu(page, s, profile);
  dedup_lines(page, profile.dedup());
  return std::move(page).str();
}

}  // namespace opprof
