#include "opprof/compare/compare_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "opprof/report/json_writer.hpp"
#include "opprof/report/terminal.hpp"

namespace opprof {
namespace {

constexpr std::size_t kNameWidth = 60;
constexpr std::size_t kUnalignedNamesShown = 3;

double pct_of(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole)
                   : std::numeric_limits<double>::quiet_NaN();
}

std::string pct_text(double v) { return std::isfinite(v) ? fmt::format("{:.1f}%", v) : std::string("-"); }

std::string or_none(const std::string& s) { return s.empty() ? std::string("(none)") : s; }

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string activity_word(const ProfileComparison& c, std::size_t n) {
  return c.all_activity ? plural(n, "activity", "activities") : plural(n, "kernel", "kernels");
}

void side_line(std::string& out, char label, const CompareSide& s, const ProfileComparison& c) {
  out += fmt::format("  {}: {} (source {}): {}, {}\n", label, s.path, s.source.empty() ? "?" : s.source,
                     activity_word(c, s.kernels), format_duration_ns(s.time_ns));
}

void unaligned_line(std::string& out, char label, const CompareSide& s, const ProfileComparison& c) {
  out += fmt::format("  unaligned in {}: {}", label, activity_word(c, s.unaligned));
  if (s.unaligned > 0) {
    out += fmt::format(", {} ({} of {}'s time)", format_duration_ns(s.unaligned_ns), pct_text(pct_of(s.unaligned_ns, s.time_ns)),
                       label);
    std::string names;
    std::size_t listed = 0;
    for (std::size_t i = 0; i < s.unaligned_names.size() && i < kUnalignedNamesShown; ++i) {
      const UnalignedName& u = s.unaligned_names[i];
      names += fmt::format("{}{} x{}", names.empty() ? "" : ", ", fit_width(u.kernel, kNameWidth), u.kernels);
      listed += u.kernels;
    }
    if (!names.empty() && listed < s.unaligned) names += ", ...";
    if (!names.empty()) out += fmt::format(": {}", names);
  }
  out += "\n";
}

void agreement_line(std::string& out, std::string_view what, const Agreement& a, const ProfileComparison& c) {
  out += fmt::format("  {:<20} {:>6}  {:>10}  {} of {} pairs\n", what, pct_text(a.pct), format_duration_ns(a.time_ns),
                     a.pairs, c.aligned);
}

void field_lines(std::string& out, std::string_view what, const std::string& a, const std::string& b) {
  if (a == b) {
    out += fmt::format("       {:<9} both {}\n", what, or_none(a));
  } else {
    out += fmt::format("       {:<9} A    {}\n", what, or_none(a));
    out += fmt::format("       {:<9} B    {}\n", "", or_none(b));
  }
}

std::string ncu_side(const ProfileComparison& c, const CompareSide& s) {
  if (!s.has_ncu) return "no ncu counters";
  return fmt::format("{} of {} matched", s.ncu_matched, activity_word(c, s.kernels));
}

std::string row_text(std::int64_t row, std::int64_t id) {
  return row < 0 ? std::string("no ncu row") : fmt::format("ncu row {} (ID {})", row, id);
}

void side_json(JsonWriter& j, std::string_view key, const CompareSide& s) {
  j.key(key).begin_object();
  j.key("path").string(s.path);
  j.key("source").string_or_null(s.source);
  j.key("kernels").unsigned_integer(s.kernels);
  j.key("time_ns").integer(s.time_ns);
  j.key("unaligned").unsigned_integer(s.unaligned);
  j.key("unaligned_ns").integer(s.unaligned_ns);
  j.key("unaligned_names").begin_array();
  for (const UnalignedName& u : s.unaligned_names) {
    j.begin_object();
    j.key("kernel").string(u.kernel);
    j.key("kernels").unsigned_integer(u.kernels);
    j.key("time_ns").integer(u.time_ns);
    j.end_object();
  }
  j.end_array();
  j.key("has_ncu").boolean(s.has_ncu);
  j.key("ncu_matched").unsigned_integer(s.ncu_matched);
  j.end_object();
}

void agreement_json(JsonWriter& j, std::string_view key, const Agreement& a) {
  j.key(key).begin_object();
  j.key("pairs").unsigned_integer(a.pairs);
  j.key("time_ns").integer(a.time_ns);
  j.key("pct").number(a.pct);
  j.end_object();
}

}  // namespace

std::string render_comparison_text(const ProfileComparison& c) {
  std::string out;
  out += fmt::format("opprof compare: {} aligned by name in start order, agreement weighted by A's kernel time\n",
                     c.all_activity ? "GPU activities (kernels, memcpy, memset)" : "kernels");
  side_line(out, 'A', c.a, c);
  side_line(out, 'B', c.b, c);

  out += fmt::format("\nAligned {}, {} of A's time ({}), {} of B's\n", plural(c.aligned, "pair", "pairs"),
                     format_duration_ns(c.aligned_ns_a), pct_text(pct_of(c.aligned_ns_a, c.a.time_ns)),
                     format_duration_ns(c.aligned_ns_b));
  if (!c.ordered)
    out += "  warning: the sequences differ too much to align in order; the k-th occurrences of each kernel name "
           "were paired instead\n";
  unaligned_line(out, 'A', c.a, c);
  unaligned_line(out, 'B', c.b, c);

  out += "\nAgreement (share of A's aligned kernel time)\n";
  agreement_line(out, "operator", c.op, c);
  agreement_line(out, "top-level operator", c.top_op, c);
  agreement_line(out, "module", c.module, c);

  if (!c.a.has_ncu && !c.b.has_ncu) {
    out += "\nncu: neither profile has ncu counters\n";
  } else {
    out += fmt::format("\nncu: A {}, B {}\n", ncu_side(c, c.a), ncu_side(c, c.b));
    out += fmt::format("  pairs matched in both: {}; to the same ncu row: {} ({} of their time)\n", c.ncu_both_matched,
                       c.ncu_same_row, pct_text(pct_of(c.ncu_same_row_ns, c.ncu_both_matched_ns)));
    out += fmt::format("  pairs matched in A only: {}; in B only: {}\n", c.ncu_only_a, c.ncu_only_b);
    if (!c.ncu_differences.empty()) {
      out += c.ncu_differences.size() == c.ncu_differences_total
                 ? fmt::format("  {} that ncu matching treated differently:\n",
                               plural(c.ncu_differences_total, "pair", "pairs"))
                 : fmt::format("  the first {} of {} pairs that ncu matching treated differently:\n",
                               c.ncu_differences.size(), c.ncu_differences_total);
      for (const NcuDifference& d : c.ncu_differences)
        out += fmt::format("    {}  A id {}: {}; B id {}: {}; {}\n", fit_width(d.kernel, kNameWidth), d.id_a,
                           row_text(d.row_a, d.ncu_id_a), d.id_b, row_text(d.row_b, d.ncu_id_b),
                           format_duration_ns(d.time_ns));
    }
  }

  if (c.disagreeing_pairs == 0) {
    out += "\nDisagreements: none\n";
    return out;
  }
  out += fmt::format("\nDisagreements: {}, {} ({} of A's aligned time), in {}; {}:\n",
                     plural(c.disagreeing_pairs, "pair", "pairs"), format_duration_ns(c.disagreeing_ns),
                     pct_text(pct_of(c.disagreeing_ns, c.aligned_ns_a)),
                     plural(c.disagreement_groups, "group", "groups"),
                     c.disagreements.size() == c.disagreement_groups
                         ? std::string("largest first")
                         : fmt::format("the {} largest", c.disagreements.size()));
  for (std::size_t i = 0; i < c.disagreements.size(); ++i) {
    const Disagreement& d = c.disagreements[i];
    out += fmt::format("  {:>2}. {}: {}, {} ({}), first A id {}, B id {}\n", i + 1, fit_width(d.kernel, kNameWidth),
                       plural(d.kernels, "kernel", "kernels"), format_duration_ns(d.time_ns),
                       pct_text(pct_of(d.time_ns, c.aligned_ns_a)), d.first_id_a, d.first_id_b);
    field_lines(out, "operator", d.op_a, d.op_b);
    field_lines(out, "top op", d.top_op_a, d.top_op_b);
    field_lines(out, "module", d.module_a, d.module_b);
  }
  return out;
}

std::string render_comparison_json(const ProfileComparison& c) {
  JsonWriter j;
  j.begin_object();
  side_json(j, "a", c.a);
  side_json(j, "b", c.b);
  j.key("activity").string(c.all_activity ? "all" : "kernel");
  j.key("aligned").unsigned_integer(c.aligned);
  j.key("aligned_ns_a").integer(c.aligned_ns_a);
  j.key("aligned_ns_b").integer(c.aligned_ns_b);
  j.key("ordered").boolean(c.ordered);

  j.key("agreement").begin_object();
  agreement_json(j, "operator", c.op);
  agreement_json(j, "top_operator", c.top_op);
  agreement_json(j, "module", c.module);
  j.end_object();

  j.key("ncu").begin_object();
  j.key("both_matched").unsigned_integer(c.ncu_both_matched);
  j.key("both_matched_ns").integer(c.ncu_both_matched_ns);
  j.key("same_row").unsigned_integer(c.ncu_same_row);
  j.key("same_row_ns").integer(c.ncu_same_row_ns);
  j.key("same_row_pct").number(pct_of(c.ncu_same_row_ns, c.ncu_both_matched_ns));
  j.key("only_a").unsigned_integer(c.ncu_only_a);
  j.key("only_b").unsigned_integer(c.ncu_only_b);
  j.key("differences").unsigned_integer(c.ncu_differences_total);
  j.key("first_differences").begin_array();
  for (const NcuDifference& d : c.ncu_differences) {
    j.begin_object();
    j.key("kernel").string(d.kernel);
    j.key("id_a").integer(d.id_a);
    j.key("id_b").integer(d.id_b);
    j.key("row_a").integer_or_null(d.row_a);
    j.key("row_b").integer_or_null(d.row_b);
    j.key("ncu_id_a").integer_or_null(d.row_a < 0 ? -1 : d.ncu_id_a);
    j.key("ncu_id_b").integer_or_null(d.row_b < 0 ? -1 : d.ncu_id_b);
    j.key("time_ns").integer(d.time_ns);
    j.end_object();
  }
  j.end_array();
  j.end_object();

  j.key("disagreements").begin_object();
  j.key("pairs").unsigned_integer(c.disagreeing_pairs);
  j.key("time_ns").integer(c.disagreeing_ns);
  j.key("pct").number(pct_of(c.disagreeing_ns, c.aligned_ns_a));
  j.key("groups").unsigned_integer(c.disagreement_groups);
  j.key("top").begin_array();
  for (const Disagreement& d : c.disagreements) {
    j.begin_object();
    j.key("kernel").string(d.kernel);
    j.key("kernels").unsigned_integer(d.kernels);
    j.key("time_ns").integer(d.time_ns);
    j.key("pct").number(pct_of(d.time_ns, c.aligned_ns_a));
    j.key("op_a").string_or_null(d.op_a);
    j.key("op_b").string_or_null(d.op_b);
    j.key("top_op_a").string_or_null(d.top_op_a);
    j.key("top_op_b").string_or_null(d.top_op_b);
    j.key("module_a").string_or_null(d.module_a);
    j.key("module_b").string_or_null(d.module_b);
    j.key("first_id_a").integer(d.first_id_a);
    j.key("first_id_b").integer(d.first_id_b);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  j.end_object();
  return j.str() + "\n";
}

}  // namespace opprof
