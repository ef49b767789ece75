#include "opprof/report/terminal.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <cmath>
#include <cstdlib>

#include "opprof/report/job.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

constexpr std::string_view kEllipsis = "...";

bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0u) == 0x80u; }

// A percentage in a fixed 6-column cell, "-" when unknown.
std::string pct_cell(double v, int width = 6) {
  if (!std::isfinite(v)) return fmt::format("{:>{}}", "-", width);
  return fmt::format("{:>{}.1f}", v, width);
}

std::string number_cell(double v, int width) {
  if (!std::isfinite(v) || v < 0) return fmt::format("{:>{}}", "-", width);
  return fmt::format("{:>{}.1f}", v, width);
}

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

void append_groups(std::string& out, std::string_view title, std::string_view column, const std::vector<GroupLine>& lines,
                   std::size_t total, bool keep_tail, const ReportOptions& options) {
  if (total == 0) {
    out += fmt::format("\n{}: none in this profile\n", title);
    return;
  }
  out += fmt::format("\n{} ({} of {}, by kernel time)\n", title, lines.size(), total);
  const std::size_t w = options.name_width;
  out += fmt::format("  {:<{}} {:>7} {:>10} {:>6}  {:<20} {:>6} {:>6} {:>7} {:>6} {:>9}\n", column, w, "kernels",
                     "time", "share", "bottleneck", "SM%", "DRAM%", "tensor%", "occ%", "DRAM GB/s");
  for (const GroupLine& line : lines) {
    const GroupStats& g = line.stats;
    out += fmt::format("  {:<{}} {:>7} {:>10} {:>5.1f}%  {:<20} {} {} {} {} {}\n", fit_width(g.key, w, keep_tail), w,
                       g.kernels, format_duration_ns(g.time_ns), line.time_pct,
                       fit_width(g.bottleneck.empty() ? "-" : g.bottleneck, 20), pct_cell(line.counters.sm_pct),
                       pct_cell(line.counters.dram_pct), pct_cell(line.counters.tensor_pct, 7),
                       pct_cell(line.counters.occupancy_pct), number_cell(g.dram_bandwidth_gbps, 9));
    if (!g.fused_ops.empty()) out += fmt::format("    fuses {}\n", g.fused_ops);
    if (!g.bottleneck_why.empty()) out += fmt::format("    {}: {}\n", g.bottleneck, g.bottleneck_why);
  }
}

}  // namespace

std::string format_duration_ns(std::int64_t ns) {
  const double v = static_cast<double>(ns);
  const double magnitude = std::fabs(v);
  if (magnitude < 1e3) return fmt::format("{} ns", ns);
  if (magnitude < 1e6) return fmt::format("{:.2f} us", v / 1e3);
  if (magnitude < 1e9) return fmt::format("{:.2f} ms", v / 1e6);
  return fmt::format("{:.3f} s", v / 1e9);
}

std::string fit_width(std::string_view text, std::size_t width, bool keep_tail) {
  if (text.size() <= width) return std::string(text);
  if (width <= kEllipsis.size()) return std::string(kEllipsis.substr(0, width));
  const std::size_t keep = width - kEllipsis.size();
  if (keep_tail) {
    std::size_t start = text.size() - keep;
    while (start < text.size() && is_continuation_byte(text[start])) ++start;  // never split a UTF-8 character
    return std::string(kEllipsis) + std::string(text.substr(start));
  }
  std::size_t end = keep;
  while (end > 0 && is_continuation_byte(text[end])) --end;
  return std::string(text.substr(0, end)) + std::string(kEllipsis);
}

std::string render_terminal_report(const ProfileReader& profile, const ReportOptions& options) {
  const ReportSummary s = summarize_profile(profile, options);
  const Coverage& c = s.coverage;
  auto meta = [&](const std::string& key) {
    auto it = s.metadata.find(key);
    return it == s.metadata.end() ? std::string() : it->second;
  };
  std::string out;

  // Header: where the numbers come from.
  out += fmt::format("opprof profile {}\n", s.path);
  out += fmt::format("  written {} by opprof {} (schema {})\n", meta("created_at").empty() ? "?" : meta("created_at"),
                     meta("opprof_version").empty() ? "?" : meta("opprof_version"), s.schema_version);
  std::vector<std::string> capture;
  if (!meta("timeline.source").empty()) capture.push_back("source " + meta("timeline.source"));
  for (const auto& [key, value] : s.metadata)
    if (starts_with(key, "timeline.device.") && ends_with(key, ".name"))
      capture.push_back(fmt::format("GPU {} {}", key.substr(16, key.size() - 16 - 5), value));
  if (!capture.empty()) out += fmt::format("  capture: {}\n", join(capture, ", "));
  // The caller's own facts (inputs, options, timings), except those the line above already shows. Of
  // capture.json's many facts only the few that explain the numbers are shown; the database has them all.
  static const char* const kCaptureShown[] = {"capture.versions.torch", "capture.compile", "capture.train",
                                              "capture.window", "capture.sm_clock.before_warmup.mhz",
                                              "capture.sm_clock.after_measured.mhz", "capture.status"};
  for (const auto& [key, value] : s.metadata) {
    if (key == "schema_version" || key == "created_at" || key == "opprof_version" || starts_with(key, "timeline.") ||
        starts_with(key, "ncu.") || starts_with(key, "note.") || starts_with(key, "warning."))
      continue;
    if (starts_with(key, "capture.") &&
        std::none_of(std::begin(kCaptureShown), std::end(kCaptureShown), [&](const char* k) { return key == k; }))
      continue;
    out += fmt::format("  {}: {}\n", key, value);
  }
  if (!meta("ncu.path").empty()) out += fmt::format("  ncu: {}\n", meta("ncu.path"));
  if (!s.warnings.empty()) {
    out += "\n";
    for (const std::string& w : s.warnings) out += fmt::format("warning: {}\n", w);
  }

  // Coverage.
  out += fmt::format("\nKernel time {} in {}\n", format_duration_ns(c.kernel_time_ns),
                     plural(c.kernels, "kernel", "kernels"));
  out += fmt::format("  attributed to an operator   {:>5.1f}%\n", c.pct(c.attributed_ns));
  out += fmt::format("  attributed to a module      {:>5.1f}%\n", c.pct(c.module_attributed_ns));
  std::string backends;
  for (const auto& [backend, ns] : c.opaque_backends)
    backends += fmt::format("{}{} {:.1f}%", backends.empty() ? "  (" : ", ", backend, c.pct(ns));
  if (!backends.empty()) backends += ")";
  out += fmt::format("  inside opaque backends      {:>5.1f}%{}\n", c.pct(c.opaque_ns), backends);
  out += fmt::format("  by path: correlation {:.1f}%  enclosure {:.1f}%  fusion {:.1f}%  none {:.1f}%\n",
                     c.pct(c.by_path_ns[static_cast<int>(AttributionPath::kCorrelation)]),
                     c.pct(c.by_path_ns[static_cast<int>(AttributionPath::kEnclosure)]),
                     c.pct(c.by_path_ns[static_cast<int>(AttributionPath::kFusion)]),
                     c.pct(c.by_path_ns[static_cast<int>(AttributionPath::kNone)]));
  out += fmt::format("  by phase: forward {:.1f}%  backward {:.1f}%  optimizer {:.1f}%  other {:.1f}%\n",
                     c.pct(c.by_phase_ns[static_cast<int>(Phase::kForward)]),
                     c.pct(c.by_phase_ns[static_cast<int>(Phase::kBackward)]),
                     c.pct(c.by_phase_ns[static_cast<int>(Phase::kOptimizer)]),
                     c.pct(c.by_phase_ns[static_cast<int>(Phase::kOther)]));
  if (const std::int64_t comm = c.by_phase_ns[static_cast<int>(Phase::kCommunication)]; comm > 0)
    out += fmt::format("  communication {:.1f}%\n", c.pct(comm));
  out += render_job_section(profile);

  append_groups(out, "Top operators", "operator", s.operators, s.operator_count, false, options);
  append_groups(out, "Top modules", "module", s.modules, s.module_count, true, options);

  // Unattributed kernel time: every kernel that attribution could not place, grouped, with the reason.
  std::int64_t unattributed_ns = 0;
  for (const UnattributedGroup& u : c.unattributed) unattributed_ns += u.time_ns;
  if (c.unattributed.empty()) {
    out += "\nUnattributed kernel time: none\n";
  } else {
    out += fmt::format("\nUnattributed kernel time {} ({:.1f}%) in {}\n", format_duration_ns(unattributed_ns),
                       c.pct(unattributed_ns), plural(c.unattributed.size(), "group", "groups"));
    const std::size_t shown =
        options.unattributed == 0 ? c.unattributed.size() : std::min(options.unattributed, c.unattributed.size());
    const std::size_t w = options.name_width;
    out += fmt::format("  {:<{}} {:<40} {:>7} {:>10} {:>6}\n", "family", w, "reason", "kernels", "time", "share");
    for (std::size_t i = 0; i < shown; ++i) {
      const UnattributedGroup& u = c.unattributed[i];
      out += fmt::format("  {:<{}} {:<40} {:>7} {:>10} {:>5.1f}%\n", fit_width(u.family, w), w, fit_width(u.reason, 40),
                         u.kernels, format_duration_ns(u.time_ns), c.pct(u.time_ns));
    }
    if (shown < c.unattributed.size()) {
      std::int64_t rest = 0;
      for (std::size_t i = shown; i < c.unattributed.size(); ++i) rest += c.unattributed[i].time_ns;
      const std::size_t left = c.unattributed.size() - shown;
      out += fmt::format("  ... {} more {}, {} ({:.1f}%)\n", left, left == 1 ? "group" : "groups",
                         format_duration_ns(rest), c.pct(rest));
    }
  }

  // Choices the engine made on its own: the figures above rest on them.
  if (!s.anomalies.empty()) {
    out += "\nAnomalies (table anomalies): choices the inputs left open\n";
    for (const ProfileAnomaly& a : s.anomalies) {
      out += fmt::format("  {} x{}\n", a.kind, a.count);
      if (!a.details.empty()) out += fmt::format("    {}\n", a.details.front());
      if (a.count > 1) out += fmt::format("    ... {} more\n", a.count - 1);
    }
  }

  // ncu matching.
  if (!c.has_ncu) {
    out += "\nncu: no counters in this profile (timeline only)\n";
  } else {
    const std::string identity = meta("ncu.used_mangled_names") == "true" ? "exact mangled names"
                                                                          : "base name + grid + block";
    const std::string other_config =
        c.ncu_launch_config_differs == 0 ? std::string()
        : c.ncu_strict_launch_config
            ? fmt::format(", {} of another launch configuration refused", c.ncu_launch_config_differs)
            : fmt::format(", {} of them of another launch configuration", c.ncu_launch_config_differs);
    out += fmt::format("\nncu: {}, {} matched to kernels ({}{}); {} matched no kernel; {} without counters\n",
                       plural(c.ncu_rows, "row", "rows"), c.ncu_matched, identity, other_config,
                       plural(c.ncu_unmatched_rows, "row", "rows"), plural(c.ncu_unmatched_kernels, "kernel", "kernels"));
    constexpr std::size_t kNotesShown = 5;
    for (std::size_t i = 0; i < s.match_notes.size() && i < kNotesShown; ++i)
      out += fmt::format("  {}\n", s.match_notes[i]);
    if (s.match_notes.size() > kNotesShown)
      out += fmt::format("  ... {} more match notes (table match_notes)\n", s.match_notes.size() - kNotesShown);
  }
  return out;
}

}  // namespace opprof
