#include "opprof/report/profile_diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include "opprof/report/module_tree.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

DiffSide side_of(const ProfileReader& p) {
  DiffSide s;
  s.path = p.path();
  const Coverage& c = p.coverage();
  s.kernel_time_ns = c.kernel_time_ns;
  s.kernels = c.kernels;
  s.has_ncu = c.has_ncu;
  for (const auto& [key, value] : p.metadata())
    if (starts_with(key, "timeline.device.") && ends_with(key, ".name")) s.gpus.push_back(value);
  s.chip = p.meta("chip");
  for (const ProfileMetric& m : p.metrics())
    if (m.present) s.metrics.push_back(m.name);
  std::sort(s.metrics.begin(), s.metrics.end());
  return s;
}

void sort_rows(std::vector<DiffRow>& rows) {
  std::sort(rows.begin(), rows.end(), [](const DiffRow& a, const DiffRow& b) {
    const std::int64_t x = std::max(a.base_ns, a.new_ns), y = std::max(b.base_ns, b.new_ns);
    return x != y ? x > y : natural_less(a.key, b.key);
  });
}

// The rows of two lists of groups, joined by key.
std::vector<DiffRow> join_groups(const std::vector<GroupStats>& base, const std::vector<GroupStats>& next) {
  std::map<std::string, DiffRow> rows;
  // One side's groups into the rows' fields of that side.
  auto add = [&rows](const std::vector<GroupStats>& groups, bool DiffRow::*in, std::int64_t DiffRow::*ns,
                     std::uint64_t DiffRow::*kernels, std::string DiffRow::*bottleneck) {
    for (const GroupStats& g : groups) {
      DiffRow& r = rows[g.key];
      r.key = g.key;
      r.*in = true;
      r.*ns += g.time_ns;
      r.*kernels += g.kernels;
      r.*bottleneck = g.bottleneck;
    }
  };
  add(base, &DiffRow::in_base, &DiffRow::base_ns, &DiffRow::base_kernels, &DiffRow::base_bottleneck);
  add(next, &DiffRow::in_new, &DiffRow::new_ns, &DiffRow::new_kernels, &DiffRow::new_bottleneck);
  std::vector<DiffRow> out;
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  sort_rows(out);
  return out;
}

// Every node of the tree as a group of its inclusive time, keyed by path; the no-module remainder under
// kNoModuleKey.
std::vector<GroupStats> tree_groups(const ProfileReader& p) {
  const ModuleTree tree = build_module_tree(p.groups(GroupBy::kModule));
  std::vector<GroupStats> out;
  for (const ModuleNode* n : flatten_module_tree(tree)) {
    GroupStats g;
    g.key = n->path;
    g.time_ns = n->inclusive_ns;
    g.kernels = n->inclusive_kernels;
    g.bottleneck = n->bottleneck;
    out.push_back(std::move(g));
  }
  if (tree.no_module_kernels > 0) {
    GroupStats g;
    g.key = std::string(kNoModuleKey);
    g.time_ns = tree.no_module_ns;
    g.kernels = tree.no_module_kernels;
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<CounterChange> counter_changes(const ProfileReader& base, const ProfileReader& next,
                                           const std::vector<GroupStats>& base_ops,
                                           const std::vector<GroupStats>& new_ops, std::size_t keep) {
  std::map<std::string, const GroupStats*> by_key;
  for (const GroupStats& g : new_ops) by_key.emplace(g.key, &g);
  const double base_total = static_cast<double>(std::max<std::int64_t>(base.coverage().kernel_time_ns, 1));
  const double new_total = static_cast<double>(std::max<std::int64_t>(next.coverage().kernel_time_ns, 1));
  std::vector<CounterChange> out;
  for (const GroupStats& b : base_ops) {
    auto it = by_key.find(b.key);
    if (it == by_key.end()) continue;
    const GroupStats& n = *it->second;
    const double share = std::max(static_cast<double>(b.time_ns) / base_total, static_cast<double>(n.time_ns) / new_total);
    for (std::size_t i = 0; i < base.metrics().size() && i < b.metric.size(); ++i) {
      const ProfileMetric& m = base.metrics()[i];
      const std::size_t j = next.metric_index(m.name);
      if (j == ProfileReader::npos || j >= n.metric.size()) continue;  // a metric of one set only
      const double x = b.metric[i], y = n.metric[j];
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      // A percentage of peak changes by points of 100 (0.001 % -> 0.0004 % is no change); counts relatively.
      const double scale = m.unit == "%" ? 100.0 : std::max(std::fabs(x), std::fabs(y));
      if (!(scale > 0)) continue;
      out.push_back({b.key, m.name, m.unit, x, y, std::fabs(y - x) / scale * share});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const CounterChange& a, const CounterChange& b) { return a.score > b.score; });
  std::erase_if(out, [](const CounterChange& c) { return !(c.score > 0); });
  if (keep > 0 && out.size() > keep) out.resize(keep);
  return out;
}

std::vector<std::string> comparability_warnings(const DiffSide& a, const DiffSide& b) {
  std::vector<std::string> w;
  if (a.gpus != b.gpus)
    w.push_back(fmt::format("The profiles ran on different GPUs ({} and {}): kernel times compare across hardware.",
                            a.gpus.empty() ? "unknown" : join(a.gpus, ", "),
                            b.gpus.empty() ? "unknown" : join(b.gpus, ", ")));
  else if (a.chip != b.chip && !a.chip.empty() && !b.chip.empty())
    w.push_back(fmt::format("The profiles name different chips ({} and {}).", a.chip, b.chip));
  if (a.has_ncu != b.has_ncu) {
    w.push_back(fmt::format("Only the {} profile has ncu counters: no counter is compared.", a.has_ncu ? "base" : "new"));
  } else if (a.has_ncu && a.metrics != b.metrics) {
    std::vector<std::string> only_a, only_b;
    std::set_difference(a.metrics.begin(), a.metrics.end(), b.metrics.begin(), b.metrics.end(),
                        std::back_inserter(only_a));
    std::set_difference(b.metrics.begin(), b.metrics.end(), a.metrics.begin(), a.metrics.end(),
                        std::back_inserter(only_b));
    w.push_back(fmt::format("The metric sets differ ({} metric(s) only in the base, {} only in the new profile): "
                            "counters are compared on the {} they share.",
                            only_a.size(), only_b.size(), a.metrics.size() - only_a.size()));
  }
  return w;
}

// The processes of a job that are its ranks: those that ran GPU work or should have (not idle launchers).
std::vector<const ProfileProcess*> ranks_of(const std::vector<ProfileProcess>& processes) {
  std::vector<const ProfileProcess*> out;
  for (const ProfileProcess& p : processes)
    if (p.status != "idle") out.push_back(&p);
  return out;
}

bool all_ranked(const std::vector<const ProfileProcess*>& ranks) {
  return std::all_of(ranks.begin(), ranks.end(), [](const ProfileProcess* p) { return p->rank != kNoRank; });
}

void compare_ranks(const ProfileReader& base, const ProfileReader& next, ProfileDiff& d) {
  const std::vector<ProfileProcess> base_processes = base.processes(), new_processes = next.processes();
  if (base_processes.empty() && new_processes.empty()) return;
  if (base_processes.empty() || new_processes.empty()) {
    d.warnings.push_back(fmt::format("Only the {} profile is a multi-process job: ranks are not compared.",
                                     base_processes.empty() ? "new" : "base"));
    return;
  }
  const std::vector<const ProfileProcess*> a = ranks_of(base_processes), b = ranks_of(new_processes);
  const bool by_rank = all_ranked(a) && all_ranked(b);
  if (!by_rank)
    d.warnings.push_back("Some processes have no rank: ranks are matched by their position among the processes.");
  // Slot of each rank, and the slot each process id of either side fills.
  std::map<std::int64_t, std::size_t> slot_of_key;
  std::map<std::int64_t, std::size_t> base_slot, new_slot;
  auto place = [&](const std::vector<const ProfileProcess*>& side, std::map<std::int64_t, std::size_t>& slot_by_id,
                   bool is_base) {
    for (std::size_t i = 0; i < side.size(); ++i) {
      const ProfileProcess& p = *side[i];
      const std::int64_t key = by_rank ? p.rank : static_cast<std::int64_t>(i);
      auto [it, added] = slot_of_key.emplace(key, d.ranks.size());
      if (added) {
        d.ranks.emplace_back();
        d.ranks.back().label = by_rank ? fmt::format("rank {}", key) : fmt::format("process {}", key);
      }
      RankDiff& r = d.ranks[it->second];
      (is_base ? r.in_base : r.in_new) = true;
      (is_base ? r.base_status : r.new_status) = p.status;
      if (p.has_summary) (is_base ? r.base : r.next) = p.figures;
      slot_by_id[p.id] = it->second;
    }
  };
  place(a, base_slot, true);
  place(b, new_slot, false);
  // In rank order (slot_of_key is ordered by rank or position).
  std::vector<RankDiff> ordered;
  std::vector<std::size_t> new_index(d.ranks.size());
  for (const auto& [key, slot] : slot_of_key) {
    new_index[slot] = ordered.size();
    ordered.push_back(std::move(d.ranks[slot]));
  }
  d.ranks = std::move(ordered);
  std::vector<std::string> missing, changed;
  for (const RankDiff& r : d.ranks) {
    if (!r.in_base || !r.in_new) missing.push_back(fmt::format("{} only in the {}", r.label, r.in_base ? "base" : "new profile"));
    else if (r.base_status != r.new_status) changed.push_back(fmt::format("{} {} -> {}", r.label, r.base_status, r.new_status));
  }
  if (!missing.empty())
    d.warnings.push_back(fmt::format("The jobs have different ranks ({}).", join(missing, ", ")));
  if (!changed.empty())
    d.warnings.push_back(fmt::format("Some ranks' captures differ in state ({}): their times compare only as far "
                                     "as both were attributed.", join(changed, ", ")));

  std::map<std::pair<std::size_t, std::string>, DiffRow> rows;
  auto add = [&](const ProfileReader& p, const std::map<std::int64_t, std::size_t>& slot_by_id, bool is_base) {
    for (const ProfileRankGroup& g : p.rank_groups("operator")) {
      auto slot = slot_by_id.find(g.process_id);
      if (slot == slot_by_id.end()) continue;  // an idle process has no operators
      DiffRow& r = rows[{new_index[slot->second], g.key}];
      r.key = g.key;
      (is_base ? r.in_base : r.in_new) = true;
      (is_base ? r.base_ns : r.new_ns) += g.time_ns;
      (is_base ? r.base_kernels : r.new_kernels) += g.kernels;
    }
  };
  add(base, base_slot, true);
  add(next, new_slot, false);
  for (auto& [key, row] : rows) d.rank_operators.push_back({d.ranks[key.first].label, std::move(row)});
  auto change = [](const RankOperatorDiff& r) { return std::llabs(r.row.new_ns - r.row.base_ns); };
  std::stable_sort(d.rank_operators.begin(), d.rank_operators.end(),
                   [&](const RankOperatorDiff& x, const RankOperatorDiff& y) { return change(x) > change(y); });
}

}  // namespace

double RankDiff::speedup() const {
  return base.kernel_time_ns > 0 && next.kernel_time_ns > 0
             ? static_cast<double>(base.kernel_time_ns) / static_cast<double>(next.kernel_time_ns)
             : kNaN;
}

double DiffRow::speedup() const {
  return base_ns > 0 && new_ns > 0 ? static_cast<double>(base_ns) / static_cast<double>(new_ns) : kNaN;
}

double ProfileDiff::speedup() const {
  return base.kernel_time_ns > 0 && next.kernel_time_ns > 0
             ? static_cast<double>(base.kernel_time_ns) / static_cast<double>(next.kernel_time_ns)
             : kNaN;
}

double ProfileDiff::slowdown_pct() const {
  if (base.kernel_time_ns <= 0) return next.kernel_time_ns > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return 100.0 * static_cast<double>(next.kernel_time_ns - base.kernel_time_ns) / static_cast<double>(base.kernel_time_ns);
}

ProfileDiff diff_profiles(const ProfileReader& base, const ProfileReader& next, const DiffOptions& options) {
  ProfileDiff d;
  d.base = side_of(base);
  d.next = side_of(next);
  d.warnings = comparability_warnings(d.base, d.next);
  const std::vector<GroupStats> base_ops = base.groups(GroupBy::kOperator);
  const std::vector<GroupStats> new_ops = next.groups(GroupBy::kOperator);
  d.operators = join_groups(base_ops, new_ops);
  d.modules = join_groups(tree_groups(base), tree_groups(next));
  d.families = join_groups(base.groups(GroupBy::kFamily), next.groups(GroupBy::kFamily));
  if (d.base.has_ncu && d.next.has_ncu) d.counters = counter_changes(base, next, base_ops, new_ops, options.counters);
  compare_ranks(base, next, d);
  return d;
}

}  // namespace opprof
