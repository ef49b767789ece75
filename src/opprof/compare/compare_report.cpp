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
  j.fields({{"path", s.path}, {"source", JsonValue::or_null(s.source)}, {"kernels", s.kernels},
            {"time_ns", s.time_ns}, {"unaligned", s.unaligned}, {"unaligned_ns", s.unaligned_ns}});
  j.key("unaligned_names").begin_array();
  for (const UnalignedName& u : s.unaligned_names)
    j.begin_object().fields({{"kernel", u.kernel}, {"kernels", u.kernels}, {"time_ns", u.time_ns}}).end_object();
  j.end_array();
  j.fields({{"has_ncu", s.has_ncu}, {"ncu_matched", s.ncu_matched}});
  j.end_object();
}

void agreement_json(JsonWriter& j, std::string_view key, const Agreement& a) {
  j.key(key).begin_object();
  j.fields({{"pairs", a.pairs}, {"time_ns", a.time_ns}, {"pct", a.pct}});
  j.end_object();
}

}  // namespace

std::string render_comparison_text(const ProfileComparison& c) {
  std::string out;
  out += fmt::format("opprof compare-attribution: {} aligned by name in start order, agreement weighted by A's kernel time\n",
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
  j.fields({{"activity", c.all_activity ? "all" : "kernel"}, {"aligned", c.aligned}, {"aligned_ns_a", c.aligned_ns_a},
            {"aligned_ns_b", c.aligned_ns_b}, {"ordered", c.ordered}});

  j.key("agreement").begin_object();
  agreement_json(j, "operator", c.op);
  agreement_json(j, "top_operator", c.top_op);
  agreement_json(j, "module", c.module);
  j.end_object();

  j.key("ncu").begin_object();
  j.fields({{"both_matched", c.ncu_both_matched}, {"both_matched_ns", c.ncu_both_matched_ns},
            {"same_row", c.ncu_same_row}, {"same_row_ns", c.ncu_same_row_ns},
            {"same_row_pct", pct_of(c.ncu_same_row_ns, c.ncu_both_matched_ns)}});
  j.fields({{"only_a", c.ncu_only_a}, {"only_b", c.ncu_only_b}, {"differences", c.ncu_differences_total}});
  j.key("first_differences").begin_array();
  for (const NcuDifference& d : c.ncu_differences) {
    j.begin_object();
    j.fields({{"kernel", d.kernel}, {"id_a", d.id_a}, {"id_b", d.id_b}, {"row_a", JsonValue::or_null(d.row_a)},
              {"row_b", JsonValue::or_null(d.row_b)}});
    j.fields({{"ncu_id_a", JsonValue::or_null(d.row_a < 0 ? std::int64_t{-1} : d.ncu_id_a)},
              {"ncu_id_b", JsonValue::or_null(d.row_b < 0 ? std::int64_t{-1} : d.ncu_id_b)}, {"time_ns", d.time_ns}});
    j.end_object();
  }
  j.end_array();
  j.end_object();

  j.key("disagreements").begin_object();
  j.fields({{"pairs", c.disagreeing_pairs}, {"time_ns", c.disagreeing_ns},
            {"pct", pct_of(c.disagreeing_ns, c.aligned_ns_a)}, {"groups", c.disagreement_groups}});
  j.key("top").begin_array();
  for (const Disagreement& d : c.disagreements) {
    j.begin_object();
    j.fields({{"kernel", d.kernel}, {"kernels", d.kernels}, {"time_ns", d.time_ns},
              {"pct", pct_of(d.time_ns, c.aligned_ns_a)}});
    j.fields({{"op_a", JsonValue::or_null(d.op_a)}, {"op_b", JsonValue::or_null(d.op_b)},
              {"top_op_a", JsonValue::or_null(d.top_op_a)}, {"top_op_b", JsonValue::or_null(d.top_op_b)},
              {"module_a", JsonValue::or_null(d.module_a)}, {"module_b", JsonValue::or_null(d.module_b)}});
    j.fields({{"first_id_a", d.first_id_a}, {"first_id_b", d.first_id_b}});
    j.end_object();
  }
  j.end_array();
  j.end_object();
  j.end_object();
  return j.str() + "\n";
}

}  // namespace opprof
