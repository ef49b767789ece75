#include "opprof/report/job.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <utility>

#include "opprof/report/terminal.hpp"
#include "opprof/report/text_table.hpp"
#include "opprof/report/units.hpp"

namespace opprof {
namespace {

constexpr std::size_t kUnequalShown = 5;

// A process's times in the JSON report, in this order.
constexpr std::pair<const char*, std::int64_t RankFigures::*> kFigureTimes[] = {
    {"kernel_time_ns", &RankFigures::kernel_time_ns},
    {"compute_ns", &RankFigures::compute_ns},
    {"communication_kernel_ns", &RankFigures::communication_kernel_ns},
    {"communication_copy_ns", &RankFigures::communication_copy_ns},
    {"communication_ns", &RankFigures::communication_ns},
    {"overlap_ns", &RankFigures::overlap_ns},
    {"exposed_communication_ns", &RankFigures::exposed_communication_ns},
    {"cpu_communication_ns", &RankFigures::cpu_communication_ns},
    {"cpu_overlap_ns", &RankFigures::cpu_overlap_ns},
    {"busy_ns", &RankFigures::busy_ns},
    {"span_ns", &RankFigures::span_ns},
};

double share(std::int64_t part, std::int64_t whole) { return whole > 0 ? double(part) / double(whole) : 0.0; }

// A launcher process that ran no GPU work is one of the job's processes but not one of its ranks.
bool is_idle(const ProfileProcess& p) { return p.status == "idle"; }

// The job's totals over its attributed processes. Every share the reports give is a part over a whole that
// contains it: communication on the device over the GPU's busy time (the union of all activities), NCCL
// kernels over kernel time, the overlapped part over the communication, the collectives' CPU time over the
// step's wall span (which includes those CPU ranges).
struct JobTotals {
  std::int64_t kernel_time_ns = 0, communication_kernel_ns = 0, communication_copy_ns = 0, communication_ns = 0,
               overlap_ns = 0, exposed_ns = 0, busy_ns = 0, cpu_communication_ns = 0, cpu_overlap_ns = 0, span_ns = 0;
  const ProfileProcess* slowest = nullptr;
  const ProfileProcess* fastest = nullptr;
};

JobTotals totals(const std::vector<ProfileProcess>& processes) {
  JobTotals t;
  for (const ProfileProcess& p : processes) {
    if (!p.has_summary) continue;
    const RankFigures& f = p.figures;
    t.kernel_time_ns += f.kernel_time_ns;
    t.communication_kernel_ns += f.communication_kernel_ns;
    t.communication_copy_ns += f.communication_copy_ns;
    t.communication_ns += f.communication_ns;
    t.overlap_ns += f.overlap_ns;
    t.exposed_ns += f.exposed_communication_ns;
    t.busy_ns += f.busy_ns;
    t.cpu_communication_ns += f.cpu_communication_ns;
    t.cpu_overlap_ns += f.cpu_overlap_ns;
    t.span_ns += f.span_ns;
    if (!t.slowest || f.kernel_time_ns > t.slowest->figures.kernel_time_ns) t.slowest = &p;
    if (!t.fastest || f.kernel_time_ns < t.fastest->figures.kernel_time_ns) t.fastest = &p;
  }
  return t;
}

std::string rank_label(const ProfileProcess& p) {
  return p.rank != kNoRank ? fmt::format("rank {}", p.rank) : fmt::format("pid {}", p.pid);
}

// Operators by how much their time differs between the processes that have a timeline (the largest minus
// the smallest time, a process without the operator counting 0).
struct Unequal {
  std::string key;
  std::map<std::int64_t, std::int64_t> time_by_process;
  std::int64_t spread_ns = 0;
};

std::vector<Unequal> most_unequal(const ProfileReader& profile, const std::vector<ProfileProcess>& processes) {
  std::map<std::string, Unequal> by_key;
  for (const ProfileRankGroup& g : profile.rank_groups("operator")) {
    Unequal& u = by_key[g.key];
    u.key = g.key;
    u.time_by_process[g.process_id] += g.time_ns;
  }
  std::vector<Unequal> out;
  for (auto& [key, u] : by_key) {
    std::int64_t lo = -1, hi = 0;
    for (const ProfileProcess& p : processes) {
      if (!p.has_summary) continue;
      auto it = u.time_by_process.find(p.id);
      const std::int64_t t = it == u.time_by_process.end() ? 0 : it->second;
      lo = lo < 0 ? t : std::min(lo, t);
      hi = std::max(hi, t);
    }
    u.spread_ns = hi - std::max<std::int64_t>(lo, 0);
    out.push_back(std::move(u));
  }
  std::stable_sort(out.begin(), out.end(), [](const Unequal& a, const Unequal& b) { return a.spread_ns > b.spread_ns; });
  if (out.size() > kUnequalShown) out.resize(kUnequalShown);
  return out;
}

const ProfileProcess* process_of(const std::vector<ProfileProcess>& processes, std::int64_t id) {
  for (const ProfileProcess& p : processes)
    if (p.id == id) return &p;
  return nullptr;
}

// "rank 0: all_reduce x2, 186 MB of Float in process group 0 (default_pg, 2 ranks)".
void collective_lines(Page& page, const ProfileReader& profile, const std::vector<ProfileProcess>& processes) {
  const std::vector<ProfileCollectiveMessages> messages = profile.collective_messages();
  if (messages.empty()) return;
  page.line("  collectives whose tensors the trace recorded:");
  for (const ProfileCollectiveMessages& m : messages) {
    const ProfileProcess* p = process_of(processes, m.process_id);
    std::string group;
    if (!m.process_group.empty()) {
      group = " in process group " + m.process_group;
      std::vector<std::string> about;
      if (!m.process_group_desc.empty()) about.push_back(m.process_group_desc);
      if (m.group_size >= 0) about.push_back(fmt::format("{} ranks", m.group_size));
      if (!about.empty()) group += fmt::format(" ({})", fmt::join(about, ", "));
    }
    page.line(fmt::format("    {}: {} x{}, {}{}{}", p ? rank_label(*p) : "?", m.collective.empty() ? "?" : m.collective,
                          m.count, format_bytes(double(m.bytes)), m.dtype.empty() ? "" : " of " + m.dtype, group));
  }
}

}  // namespace

void job_section(Page& page, const ProfileReader& profile) {
  const std::vector<ProfileProcess> processes = profile.processes();
  if (processes.empty()) return;
  const JobTotals t = totals(processes);
  const auto ranks = static_cast<std::size_t>(std::count_if(processes.begin(), processes.end(),
                                                            [](const ProfileProcess& p) { return !is_idle(p); }));
  page.blank();
  page.title(fmt::format("Ranks ({} processes)", ranks));
  std::vector<std::string> labels;
  for (const ProfileProcess& p : processes)
    if (!is_idle(p)) labels.push_back(rank_label(p));
  const std::vector<Column> columns = fit_columns(
      page.width(), "process", longest_name(labels),
      {{"kernels", 7}, {"kernel time", 11}, {"vs mean", 7}, {"GPU comm", 9}, {"overlap", 7}, {"CPU comm", 9},
       {"NCCL", 9}, {"comm copies", 11}, {"span", 9}, {"status", 9, false, 2}},
      4);
  page.raw(table_header(columns, page.style()));
  std::string idle;
  for (const ProfileProcess& p : processes) {
    if (is_idle(p)) {
      idle += fmt::format("{}{} ({})", idle.empty() ? "" : ", ", rank_label(p), p.problem);
      continue;
    }
    if (!p.has_summary) {
      page.raw(table_row(columns, {rank_label(p), "-", "-", "-", "-", "-", "-", "-", "-", "-", p.status}, page.style()));
      if (!p.problem.empty()) page.line("    " + p.problem);
      continue;
    }
    const RankFigures& f = p.figures;
    page.raw(table_row(columns,
                       {rank_label(p), std::to_string(f.kernels), format_duration_ns(f.kernel_time_ns),
                        fmt::format("{:.2f}", f.time_vs_mean), format_duration_ns(f.communication_ns),
                        format_pct(100.0 * share(f.overlap_ns, f.communication_ns)),
                        format_duration_ns(f.cpu_communication_ns), format_duration_ns(f.communication_kernel_ns),
                        format_duration_ns(f.communication_copy_ns), format_duration_ns(f.span_ns), p.status},
                       page.style()));
    if (!p.problem.empty()) page.line("    " + p.problem);
  }
  if (t.slowest && t.fastest)
    page.line(fmt::format("  imbalance: {} has {:.2f}x the mean kernel time, {} {:.2f}x", rank_label(*t.slowest),
                          t.slowest->figures.time_vs_mean, rank_label(*t.fastest), t.fastest->figures.time_vs_mean));
  page.line(fmt::format(
      "  communication on the GPU: {} ({:.1f}% of the time the GPU was busy): NCCL kernels {} ({:.1f}% of kernel time, "
      "the communication phase), copies inside collectives {} (gloo's, not kernel time); {:.1f}% overlapped by "
      "computation, {} exposed",
      format_duration_ns(t.communication_ns), 100.0 * share(t.communication_ns, t.busy_ns),
      format_duration_ns(t.communication_kernel_ns), 100.0 * share(t.communication_kernel_ns, t.kernel_time_ns),
      format_duration_ns(t.communication_copy_ns), 100.0 * share(t.overlap_ns, t.communication_ns),
      format_duration_ns(t.exposed_ns)));
  page.line(fmt::format(
      "  communication on the CPU: {} of collectives' ranges (gloo reduces on the CPU; {:.1f}% of the ranks' wall span "
      "{}), {:.1f}% of it while a computation kernel ran",
      format_duration_ns(t.cpu_communication_ns), 100.0 * share(t.cpu_communication_ns, t.span_ns),
      format_duration_ns(t.span_ns), 100.0 * share(t.cpu_overlap_ns, t.cpu_communication_ns)));
  if (!idle.empty()) page.line("  not ranks: " + idle);
  collective_lines(page, profile, processes);
  const std::vector<Unequal> unequal = most_unequal(profile, processes);
  if (!unequal.empty() && unequal.front().spread_ns > 0) {
    page.line("  operators whose time differs most between ranks:");
    for (const Unequal& u : unequal) {
      if (u.spread_ns == 0) break;
      std::string per;
      for (const ProfileProcess& p : processes) {
        if (!p.has_summary) continue;
        auto it = u.time_by_process.find(p.id);
        per += fmt::format("  {} {}", rank_label(p), format_duration_ns(it == u.time_by_process.end() ? 0 : it->second));
      }
      page.line(fmt::format("    {} (spread {}):{}", u.key, format_duration_ns(u.spread_ns), per));
    }
  }
}

void write_job_json(JsonWriter& j, const ProfileReader& profile) {
  const std::vector<ProfileProcess> processes = profile.processes();
  if (processes.empty()) {
    j.null();
    return;
  }
  const JobTotals t = totals(processes);
  j.begin_object();
  j.key("processes").begin_array();
  for (const ProfileProcess& p : processes) {
    if (is_idle(p)) continue;
    j.begin_object();
    j.key("id").integer(p.id);
    j.key("rank").integer_or_null(p.rank == kNoRank ? -1 : p.rank);
    j.key("pid").integer(p.pid);
    j.key("folder").string_or_null(p.folder);
    j.key("status").string(p.status);
    j.key("problem").string_or_null(p.problem);
    if (p.has_summary) {
      const RankFigures& f = p.figures;
      j.key("kernels").unsigned_integer(f.kernels);
      j.key("time_vs_mean").number(f.time_vs_mean);
      for (const auto& [key, member] : kFigureTimes) j.key(key).integer(f.*member);
      j.key("by_phase_ns").begin_object();
      for (int ph = 0; ph < kPhases; ++ph) j.key(to_string(static_cast<Phase>(ph))).integer(f.by_phase_ns[ph]);
      j.end_object();
    }
    j.end_object();
  }
  j.end_array();
  j.key("kernel_time_ns").integer(t.kernel_time_ns);
  j.key("idle_processes").begin_array();
  for (const ProfileProcess& p : processes)
    if (is_idle(p)) j.begin_object().key("pid").integer(p.pid).key("folder").string_or_null(p.folder).end_object();
  j.end_array();
  j.key("communication_share").number(share(t.communication_ns, t.busy_ns));
  j.key("communication_kernel_share").number(share(t.communication_kernel_ns, t.kernel_time_ns));
  j.key("overlapped_share").number(share(t.overlap_ns, t.communication_ns));
  j.key("exposed_communication_ns").integer(t.exposed_ns);
  j.key("cpu_communication_share").number(share(t.cpu_communication_ns, t.span_ns));
  j.key("cpu_overlapped_share").number(share(t.cpu_overlap_ns, t.cpu_communication_ns));
  j.key("max_time_vs_mean").number(t.slowest ? t.slowest->figures.time_vs_mean : 0.0);
  j.key("min_time_vs_mean").number(t.fastest ? t.fastest->figures.time_vs_mean : 0.0);
  j.key("collective_messages").begin_array();
  for (const ProfileCollectiveMessages& m : profile.collective_messages()) {
    const ProfileProcess* p = process_of(processes, m.process_id);
    j.begin_object();
    j.key("rank").integer_or_null(p == nullptr || p->rank == kNoRank ? -1 : p->rank);
    j.key("collective").string_or_null(m.collective);
    j.key("count").integer(m.count);
    j.key("elements").integer(m.elements);
    j.key("bytes").integer(m.bytes);
    j.key("dtype").string_or_null(m.dtype);
    j.key("process_group").string_or_null(m.process_group);
    j.key("process_group_desc").string_or_null(m.process_group_desc);
    j.key("group_size").integer_or_null(m.group_size);
    j.end_object();
  }
  j.end_array();
  j.key("most_unequal_operators").begin_array();
  for (const Unequal& u : most_unequal(profile, processes)) {
    j.begin_object().key("operator").string(u.key).key("spread_ns").integer(u.spread_ns);
    j.key("time_ns_by_process").begin_object();
    for (const auto& [id, ns] : u.time_by_process) j.key(std::to_string(id)).integer(ns);
    j.end_object().end_object();
  }
  j.end_array();
  j.end_object();
}

}  // namespace opprof
