#include "opprof/compare/profile_compare.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "opprof/match/ncu_match.hpp"
#include "opprof/match/sequence_align.hpp"
#include "opprof/timeline/string_table.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

constexpr std::uint32_t kUnaligned = 0xffffffffu;

// A memcpy's or memset's name without torch.profiler's parenthesized detail: "Memcpy DtoH".
std::string_view activity_name(std::string_view name) { return trim(name.substr(0, name.find(" ("))); }

// One compared activity of a profile; text is interned in the comparison's one table, so equal ids are
// equal text across the two profiles.
struct Activity {
  std::int64_t id = 0;  // kernels.id
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
  StrId display = kNoString;  // the name shown: kernel_base_name of a kernel's
  StrId op = kNoString, top_op = kNoString, module = kNoString;
  std::uint32_t symbol = 0;  // alignment symbol: the normalized name (Names::symbol)
  std::int64_t ncu_row = -1, ncu_id = -1;
};

// Interns text and the two names derived from each kernel name, computing each derivation once per
// distinct name (demangling is the costly part).
class Names {
 public:
  StrId text(std::string_view s) { return strings_.intern(s); }
  std::string_view view(StrId id) const { return strings_.view(id); }

  // The alignment symbol of an activity. Kernels compare kernel_match_name, which torch.profiler's
  // demangled names, the tracer's demangled and mangled names and ncu's names agree on. Copies and sets
  // compare kind and direction: torch.profiler writes "Memcpy DtoH (Device -> Pinned)" and "Memset
  // (Device)" where the tracer and nsys write "Memcpy DtoH" and "Memset".
  std::uint32_t symbol(std::string_view kind, StrId name) {
    const bool kernel = kind == "kernel";
    auto [it, inserted] = symbol_of_name_[kind_index(kind)].try_emplace(name, 0);
    if (!inserted) return it->second;
    std::string key = kernel ? "kernel:" + kernel_match_name(view(name))
                             : std::string(kind) + ":" + std::string(activity_name(view(name)));
    auto [sym, fresh] = symbols_.try_emplace(std::move(key), static_cast<std::uint32_t>(symbols_.size()));
    it->second = sym->second;
    return it->second;
  }

  // The name shown for an activity: a kernel's qualified base name, a copy's or set's name without the
  // parenthesized detail.
  StrId display(std::string_view kind, StrId name) {
    const bool kernel = kind == "kernel";
    auto [it, inserted] = display_of_name_[kind_index(kind)].try_emplace(name, kNoString);
    if (inserted) it->second = kernel ? text(kernel_base_name(view(name))) : text(activity_name(view(name)));
    return it->second;
  }

 private:
  static std::size_t kind_index(std::string_view kind) {
    return static_cast<std::size_t>(parse_activity_kind(kind).value_or(ActivityKind::kMemset));
  }

  StringTable strings_;
  // Per kind (kernel, memcpy, memset): a name's symbol and displayed name.
  std::array<std::unordered_map<StrId, std::uint32_t>, kActivityKindNames.size()> symbol_of_name_;
  std::array<std::unordered_map<StrId, StrId>, kActivityKindNames.size()> display_of_name_;
  std::unordered_map<std::string, std::uint32_t> symbols_;
};

std::vector<Activity> load_side(const ProfileReader& profile, const CompareOptions& options, Names& names,
                                CompareSide& side) {
  side.path = profile.path();
  side.source = profile.meta("timeline.source");
  side.has_ncu = profile.coverage().has_ncu;
  std::unordered_map<std::int64_t, ProfileNcuRow> ncu_of_kernel;
  for (const ProfileNcuRow& r : profile.ncu_rows())
    if (r.matched_kernel_id >= 0) ncu_of_kernel.emplace(r.matched_kernel_id, r);

  std::vector<Activity> out;
  profile.for_each_kernel([&](const ProfileKernel& k) {
    if (!options.all_activity && k.kind != "kernel") return;
    Activity a;
    a.id = k.id;
    a.start_ns = k.start_ns;
    a.duration_ns = k.end_ns - k.start_ns;
    const StrId name = names.text(k.name.empty() ? k.mangled : k.name);
    a.symbol = names.symbol(k.kind, name);
    a.display = names.display(k.kind, name);
    a.op = names.text(k.op);
    a.top_op = names.text(k.top_op);
    a.module = names.text(k.module);
    if (auto it = ncu_of_kernel.find(k.id); it != ncu_of_kernel.end()) {
      a.ncu_row = it->second.row;
      a.ncu_id = it->second.ncu_id;
    }
    out.push_back(a);
  });
  // Invocation order: start time, then the timeline row (the database's order for equal starts).
  std::sort(out.begin(), out.end(), [](const Activity& x, const Activity& y) {
    return std::tie(x.start_ns, x.id) < std::tie(y.start_ns, y.id);
  });
  side.kernels = out.size();
  for (const Activity& a : out) {
    side.time_ns += a.duration_ns;
    if (a.ncu_row >= 0) ++side.ncu_matched;
  }
  return out;
}

std::size_t shown(std::size_t top, std::size_t n) { return top == 0 ? n : std::min(top, n); }

// Kernels of one side without a counterpart, summed per displayed name, largest first.
void summarize_unaligned(const std::vector<Activity>& seq, const std::vector<bool>& aligned, const Names& names,
                         std::size_t top, CompareSide& side) {
  std::unordered_map<StrId, std::size_t> index;
  std::vector<UnalignedName> groups;
  std::vector<std::size_t> first;  // position of the group's first kernel: ties keep sequence order
  for (std::size_t i = 0; i < seq.size(); ++i) {
    if (aligned[i]) continue;
    ++side.unaligned;
    side.unaligned_ns += seq[i].duration_ns;
    auto [it, inserted] = index.try_emplace(seq[i].display, groups.size());
    if (inserted) {
      groups.push_back({std::string(names.view(seq[i].display)), 0, 0});
      first.push_back(i);
    }
    ++groups[it->second].kernels;
    groups[it->second].time_ns += seq[i].duration_ns;
  }
  std::vector<std::size_t> order(groups.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return std::tie(groups[y].time_ns, first[x]) < std::tie(groups[x].time_ns, first[y]);
  });
  order.resize(shown(top, order.size()));
  for (std::size_t g : order) side.unaligned_names.push_back(std::move(groups[g]));
}

}  // namespace

double pct_of(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole)
                   : std::numeric_limits<double>::quiet_NaN();
}

ProfileComparison compare_profiles(const ProfileReader& a, const ProfileReader& b, const CompareOptions& options) {
  ProfileComparison c;
  c.all_activity = options.all_activity;
  Names names;
  const std::vector<Activity> seq_a = load_side(a, options, names, c.a);
  const std::vector<Activity> seq_b = load_side(b, options, names, c.b);

  std::vector<std::uint32_t> sym_a(seq_a.size()), sym_b(seq_b.size());
  std::transform(seq_a.begin(), seq_a.end(), sym_a.begin(), [](const Activity& x) { return x.symbol; });
  std::transform(seq_b.begin(), seq_b.end(), sym_b.begin(), [](const Activity& x) { return x.symbol; });
  std::vector<std::uint32_t> b_for_a;
  if (sym_a == sym_b) {
    b_for_a.resize(sym_a.size());
    std::iota(b_for_a.begin(), b_for_a.end(), 0u);
  } else if (auto aligned = align_longest_common_subsequence(sym_a, sym_b)) {
    b_for_a = std::move(*aligned);
  } else {
    b_for_a = pair_occurrences(sym_a, sym_b);
    c.ordered = false;
  }

  using GroupKey = std::array<StrId, 7>;
  std::map<GroupKey, std::size_t> group_index;
  std::vector<Disagreement> groups;
  std::vector<bool> aligned_a(seq_a.size(), false), aligned_b(seq_b.size(), false);
  for (std::size_t i = 0; i < seq_a.size(); ++i) {
    if (b_for_a[i] == kUnaligned) continue;
    const Activity& x = seq_a[i];
    const Activity& y = seq_b[b_for_a[i]];
    aligned_a[i] = true;
    aligned_b[b_for_a[i]] = true;
    ++c.aligned;
    c.aligned_ns_a += x.duration_ns;
    c.aligned_ns_b += y.duration_ns;
    const std::int64_t t = x.duration_ns;
    auto tally = [&](Agreement& ag, bool same) {
      if (!same) return;
      ++ag.pairs;
      ag.time_ns += t;
    };
    tally(c.op, x.op == y.op);
    tally(c.top_op, x.top_op == y.top_op);
    tally(c.module, x.module == y.module);

    const bool ncu_a = x.ncu_row >= 0, ncu_b = y.ncu_row >= 0;
    if (ncu_a && ncu_b) {
      ++c.ncu_both_matched;
      c.ncu_both_matched_ns += t;
      if (x.ncu_row == y.ncu_row) {
        ++c.ncu_same_row;
        c.ncu_same_row_ns += t;
      }
    } else if (ncu_a) {
      ++c.ncu_only_a;
    } else if (ncu_b) {
      ++c.ncu_only_b;
    }
    if (x.ncu_row != y.ncu_row) {
      ++c.ncu_differences_total;
      if (options.top == 0 || c.ncu_differences.size() < options.top)
        c.ncu_differences.push_back({std::string(names.view(x.display)), x.id, y.id, x.ncu_row, y.ncu_row, x.ncu_id,
                                     y.ncu_id, t});
    }

    if (x.op != y.op || x.top_op != y.top_op || x.module != y.module) {
      ++c.disagreeing_pairs;
      c.disagreeing_ns += t;
      GroupKey key{x.display, x.op, y.op, x.top_op, y.top_op, x.module, y.module};
      auto [it, inserted] = group_index.try_emplace(key, groups.size());
      if (inserted) {
        Disagreement d;
        d.kernel = names.view(x.display);
        d.op_a = names.view(x.op);
        d.op_b = names.view(y.op);
        d.top_op_a = names.view(x.top_op);
        d.top_op_b = names.view(y.top_op);
        d.module_a = names.view(x.module);
        d.module_b = names.view(y.module);
        d.first_id_a = x.id;
        d.first_id_b = y.id;
        groups.push_back(std::move(d));
      }
      ++groups[it->second].kernels;
      groups[it->second].time_ns += t;
    }
  }
  for (Agreement* ag : {&c.op, &c.top_op, &c.module}) ag->pct = pct_of(ag->time_ns, c.aligned_ns_a);

  // Groups were created in A's order; the stable sort keeps it among equal times.
  std::stable_sort(groups.begin(), groups.end(),
                   [](const Disagreement& x, const Disagreement& y) { return x.time_ns > y.time_ns; });
  c.disagreement_groups = groups.size();
  groups.resize(shown(options.top, groups.size()));
  c.disagreements = std::move(groups);

  summarize_unaligned(seq_a, aligned_a, names, options.top, c.a);
  summarize_unaligned(seq_b, aligned_b, names, options.top, c.b);
  return c;
}

}  // namespace opprof
