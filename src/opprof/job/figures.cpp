#include "opprof/job/figures.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "opprof/attribute/communication.hpp"

namespace opprof {
namespace {

using Intervals = std::vector<std::pair<std::int64_t, std::int64_t>>;

// Sorted, disjoint, touching intervals joined.
Intervals merged(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& [s, e] : v) {
    if (e <= s) continue;
    if (!out.empty() && s <= out.back().second) {
      out.back().second = std::max(out.back().second, e);
    } else {
      out.emplace_back(s, e);
    }
  }
  return out;
}

std::string group_key(const Timeline& tl, StrId key, bool module) {
  if (key == kNoString) return module ? "[no module]" : "[unattributed]";  // the aggregates' spelling
  return std::string(tl.str(key));
}

// The collective ranges with arguments (CommunicationArgs) by thread, for the one around an operator range:
// the gloo:all_reduce around the aten::copy_ that launched a copy, or the record_param_comms that is itself
// the operator of an NCCL kernel.
class DescribedCollectives {
 public:
  explicit DescribedCollectives(const Timeline& tl) : r_(tl.ranges) {
    for (const CommunicationArgs& a : tl.communication_args)
      if (r_.scope(a.range) == RangeScope::kThread)
        by_thread_[{r_.pid(a.range), r_.owner(a.range)}].ranges.push_back(a.range);
    for (auto& [thread, t] : by_thread_) {
      // By start; of ranges that start together the outer (later end) first, so that the backward scan in
      // around() meets the innermost first; of equal ones the earlier row last.
      std::sort(t.ranges.begin(), t.ranges.end(), [this](std::uint32_t x, std::uint32_t y) {
        if (r_.start_ns[x] != r_.start_ns[y]) return r_.start_ns[x] < r_.start_ns[y];
        if (r_.end_ns[x] != r_.end_ns[y]) return r_.end_ns[x] > r_.end_ns[y];
        return x > y;
      });
      std::int64_t reach = 0;
      for (std::size_t i = 0; i < t.ranges.size(); ++i) {
        reach = i == 0 ? r_.end_ns[t.ranges[i]] : std::max(reach, r_.end_ns[t.ranges[i]]);
        t.max_end_ns.push_back(reach);
      }
    }
  }

  // The innermost one around op_range on its thread (the latest start that contains it); kNoIndex if none.
  std::uint32_t around(std::uint32_t op_range) const {
    if (op_range == kNoIndex) return kNoIndex;
    auto found = by_thread_.find({r_.pid(op_range), r_.owner(op_range)});
    if (found == by_thread_.end()) return kNoIndex;
    const Thread& t = found->second;
    const std::int64_t s = r_.start_ns[op_range], e = r_.end_ns[op_range];
    // The ranges that start at or before s, latest first, while any of them still reaches e.
    std::size_t i = static_cast<std::size_t>(
        std::upper_bound(t.ranges.begin(), t.ranges.end(), s,
                         [this](std::int64_t v, std::uint32_t c) { return v < r_.start_ns[c]; }) -
        t.ranges.begin());
    while (i > 0 && t.max_end_ns[i - 1] >= e) {
      --i;
      if (r_.end_ns[t.ranges[i]] >= e) return t.ranges[i];
    }
    return kNoIndex;
  }

 private:
  struct Thread {
    std::vector<std::uint32_t> ranges;     // by start, as sorted above
    std::vector<std::int64_t> max_end_ns;  // the latest end among ranges[0..i]
  };
  const RangeTable& r_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, Thread> by_thread_;  // (pid, owner)
};

// Fills each collective's arguments from the trace (its range's CommunicationArgs) and, where it names no
// process group, the process's own when it had exactly one.
void describe_collectives(const Timeline& tl, const std::vector<JobProcess>& processes, std::vector<Collective>& cs) {
  std::unordered_map<std::uint32_t, std::vector<const ProcessGroup*>> groups_of_pid;
  for (const ProcessGroup& g : tl.process_groups) groups_of_pid[g.pid].push_back(&g);
  const auto& args = tl.communication_args;  // sorted by range
  for (Collective& c : cs) {
    if (c.range_id != kNoIndex) {
      auto it = std::lower_bound(args.begin(), args.end(), c.range_id,
                                 [](const CommunicationArgs& a, std::uint32_t r) { return a.range < r; });
      if (it != args.end() && it->range == c.range_id) {
        if (c.source == "cpu_range") {  // a kernel's message is its collective's row: not counted twice
          c.elements = it->elements;
          c.bytes = it->bytes;
          c.dtype = tl.str(it->dtype);
          if (it->collective != kNoString) c.collective = tl.str(it->collective);  // record_param_comms's own
        }
        c.process_group = tl.str(it->process_group);
        c.process_group_desc = tl.str(it->process_group_desc);
        c.group_size = it->group_size;
      }
    }
    if (!c.process_group.empty()) continue;
    auto g = groups_of_pid.find(processes[c.process].pid);
    if (g == groups_of_pid.end() || g->second.size() != 1) continue;
    c.process_group = tl.str(g->second[0]->name);
    c.process_group_desc = tl.str(g->second[0]->desc);
    c.group_size = g->second[0]->size;
  }
}

}  // namespace

std::int64_t union_ns(Intervals intervals) {
  std::int64_t n = 0;
  for (const auto& [s, e] : merged(std::move(intervals))) n += e - s;
  return n;
}

std::int64_t covered_ns(Intervals a, Intervals b) {
  const Intervals x = merged(std::move(a)), y = merged(std::move(b));
  std::int64_t n = 0;
  std::size_t j = 0;
  for (const auto& [s, e] : x) {
    while (j < y.size() && y[j].second <= s) ++j;
    for (std::size_t k = j; k < y.size() && y[k].first < e; ++k) n += std::min(e, y[k].second) - std::max(s, y[k].first);
  }
  return n;
}

JobFigures compute_job_figures(const Timeline& tl, const AttributionTable& attr, const std::vector<JobProcess>& processes) {
  JobFigures out;
  std::unordered_map<std::uint32_t, std::size_t> rank_of_pid;  // pid -> index into out.ranks
  for (std::size_t p = 0; p < processes.size(); ++p) {
    if (processes[p].status != "ok" && processes[p].status != "truncated") continue;  // nothing attributed
    rank_of_pid.emplace(processes[p].pid, out.ranks.size());
    out.ranks.push_back(RankFigures{.process = p});
  }
  struct Work {
    Intervals all, compute, communication, cpu_communication;
    std::int64_t first = 0, last = 0;
    bool any = false;
  };
  std::vector<Work> work(out.ranks.size());
  std::map<std::tuple<int, std::size_t, StrId>, std::size_t> group_index;  // (kind, rank, key) -> groups row

  const DescribedCollectives described(tl);
  const KernelTable& k = tl.kernels;
  for (std::size_t i = 0; i < k.size(); ++i) {
    auto it = rank_of_pid.find(k.pid[i]);
    if (it == rank_of_pid.end()) continue;
    RankFigures& f = out.ranks[it->second];
    Work& w = work[it->second];
    const std::int64_t s = k.start_ns[i], e = k.end_ns[i], d = k.duration_ns(i);
    w.first = w.any ? std::min(w.first, s) : s;
    w.last = w.any ? std::max(w.last, e) : e;
    w.any = true;
    w.all.emplace_back(s, e);
    const bool comm = attr.phase[i] == Phase::kCommunication;
    if (comm) {
      (k.kind[i] == ActivityKind::kKernel ? f.communication_kernel_ns : f.communication_copy_ns) += d;
      w.communication.emplace_back(s, e);
      Collective c{.process = f.process, .source = "kernel", .collective = collective_of_kernel(tl.str(k.name[i]))};
      c.kernel_id = static_cast<std::uint32_t>(i);
      c.range_id = described.around(attr.op_range[i]);
      c.start_ns = s;
      c.end_ns = e;
      out.collectives.push_back(std::move(c));
    }
    if (k.kind[i] != ActivityKind::kKernel) continue;
    f.kernels += 1;
    f.kernel_time_ns += d;
    f.by_phase_ns[static_cast<int>(attr.phase[i])] += d;
    if (!comm) {
      f.compute_ns += d;
      w.compute.emplace_back(s, e);
    }
    for (int kind = 0; kind < 2; ++kind) {
      const StrId key = kind == 0 ? attr.op[i] : attr.module[i];
      auto [g, inserted] = group_index.try_emplace({kind, it->second, key}, out.groups.size());
      if (inserted)
        out.groups.push_back(RankGroupTime{kind == 0 ? "operator" : "module", group_key(tl, key, kind == 1), f.process, 0, 0});
      out.groups[g->second].kernels += 1;
      out.groups[g->second].time_ns += d;
    }
  }
  // A collective's CPU ranges (gloo's work runs on the CPU and launches nothing); their union counts, so
  // that c10d::allreduce_ around gloo:all_reduce is not counted twice.
  const RangeTable& r = tl.ranges;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (r.scope(i) != RangeScope::kThread) continue;
    auto it = rank_of_pid.find(r.pid(i));
    if (it == rank_of_pid.end()) continue;
    const std::string collective = collective_of_range(tl.str(r.text[i]));
    if (collective.empty()) continue;
    Work& w = work[it->second];
    w.cpu_communication.emplace_back(r.start_ns[i], r.end_ns[i]);
    w.first = w.any ? std::min(w.first, r.start_ns[i]) : r.start_ns[i];
    w.last = w.any ? std::max(w.last, r.end_ns[i]) : r.end_ns[i];
    w.any = true;
    Collective c{.process = out.ranks[it->second].process, .source = "cpu_range", .collective = collective};
    c.range_id = static_cast<std::uint32_t>(i);
    c.start_ns = r.start_ns[i];
    c.end_ns = r.end_ns[i];
    out.collectives.push_back(std::move(c));
  }
  describe_collectives(tl, processes, out.collectives);
  for (std::size_t q = 0; q < out.ranks.size(); ++q) {
    RankFigures& f = out.ranks[q];
    Work& w = work[q];
    f.overlap_ns = covered_ns(w.communication, w.compute);
    f.communication_ns = union_ns(w.communication);
    f.exposed_communication_ns = f.communication_ns - f.overlap_ns;
    f.cpu_communication_ns = union_ns(w.cpu_communication);
    f.cpu_overlap_ns = covered_ns(w.cpu_communication, w.compute);
    f.busy_ns = union_ns(std::move(w.all));
    f.span_ns = w.any ? w.last - w.first : 0;
  }
  std::int64_t total = 0;
  for (const RankFigures& f : out.ranks) total += f.kernel_time_ns;
  const double mean = out.ranks.empty() ? 0.0 : double(total) / double(out.ranks.size());
  for (RankFigures& f : out.ranks) f.time_vs_mean = mean > 0 ? double(f.kernel_time_ns) / mean : 0.0;
  std::stable_sort(out.collectives.begin(), out.collectives.end(), [](const Collective& x, const Collective& y) {
    return std::tie(x.process, x.start_ns) < std::tie(y.process, y.start_ns);
  });
  return out;
}

}  // namespace opprof
