#include "opprof/pipeline/attribute_job.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <unordered_map>

#include "opprof/attribute/communication.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace fs = std::filesystem;

namespace opprof {
namespace {

// One process's profile and, for its ncu rows, the row of the job's CSV each came from.
struct Part {
  std::size_t process = 0;
  AttributeResult result;
  std::vector<std::uint32_t> job_row;
  std::uint32_t kernel_offset = 0;  // its first row in the merged timeline (merge_parts sets it)
};

// The job CSV's rows of one pid, in file order.
NcuTable rows_of_process(const NcuTable& t, std::uint32_t pid, std::vector<std::uint32_t>& job_row) {
  NcuTable out;
  out.path = t.path;
  out.metric_names = t.metric_names;
  out.metric_units = t.metric_units;
  out.units_line = t.units_line;
  out.metric_unit_columns = t.metric_unit_columns;
  const std::size_t m = t.metric_names.size();
  for (std::size_t r = 0; r < t.rows(); ++r) {
    if (t.pid[r] != pid) continue;
    job_row.push_back(static_cast<std::uint32_t>(r));
    out.id.push_back(t.id[r]);
    out.pid.push_back(t.pid[r]);
    out.kernel_name.push_back(t.kernel_name[r]);
    out.context.push_back(t.context[r]);
    out.stream.push_back(t.stream[r]);
    out.device.push_back(t.device[r]);
    out.grid.push_back(t.grid[r]);
    out.block.push_back(t.block[r]);
    out.line.push_back(t.line[r]);
    out.values.insert(out.values.end(), t.values.begin() + static_cast<std::ptrdiff_t>(r * m),
                      t.values.begin() + static_cast<std::ptrdiff_t>((r + 1) * m));
  }
  return out;
}

// Which ncu process (pass B) replays each job process: the pid its counters record names; the processes
// without one (a launcher's children, which opprof's runner does not wrap) take the ncu processes no record
// names, in order of first appearance. Says so for those.
void pair_counters_processes(std::vector<JobProcess>& processes, const NcuTable& ncu, std::vector<std::string>& notes) {
  std::vector<std::uint32_t> ncu_pids;
  for (std::uint32_t pid : ncu.pid)
    if (std::find(ncu_pids.begin(), ncu_pids.end(), pid) == ncu_pids.end()) ncu_pids.push_back(pid);
  std::vector<std::uint32_t> free;
  for (std::uint32_t pid : ncu_pids) {
    bool claimed = false;
    for (const JobProcess& p : processes) claimed = claimed || p.counters_pid == pid;
    if (!claimed) free.push_back(pid);
  }
  std::size_t next = 0;
  for (JobProcess& p : processes) {
    if (p.counters_pid != 0 || p.trace.empty()) continue;
    if (next == free.size()) break;
    p.counters_pid = free[next++];
    notes.push_back(fmt::format("{} (pid {}) is paired with ncu process {} by order of first appearance (no counters "
                                "record names its pass-B process)",
                                p.label(), p.pid, p.counters_pid));
  }
}

template <typename T>
void append(std::vector<T>& out, const std::vector<T>& in) {
  out.insert(out.end(), in.begin(), in.end());
}

// Appends every named column of in to out's.
template <typename Table, typename... Columns>
void append_columns(Table& out, const Table& in, Columns... columns) {
  (append(out.*columns, in.*columns), ...);
}

// Appends every named column of interned strings, in's ids turned into out's.
template <typename Table, typename... Columns>
void append_string_columns(Table& out, const Table& in, const std::vector<StrId>& remap, Columns... columns) {
  auto one = [&](std::vector<StrId>& to, const std::vector<StrId>& from) {
    to.reserve(to.size() + from.size());
    for (StrId id : from) to.push_back(remap[id]);
  };
  (one(out.*columns, in.*columns), ...);
}

// Appends in's rows to out; returns in's string ids in out's table. pid: the process in's rows are of
// (its process groups that name none become its).
std::vector<StrId> append_timeline(Timeline& out, const Timeline& in, std::uint32_t pid) {
  std::vector<StrId> remap(in.strings.size());
  for (std::size_t id = 0; id < remap.size(); ++id) remap[id] = out.strings.intern(in.strings.view(static_cast<StrId>(id)));
  const auto range_offset = static_cast<std::uint32_t>(out.ranges.size());
  using K = KernelTable;
  append_columns(out.kernels, in.kernels, &K::kind, &K::pid, &K::device, &K::context, &K::stream, &K::start_ns, &K::end_ns,
                 &K::grid, &K::block, &K::correlation, &K::external_id, &K::graph_id, &K::graph_node,
                 &K::registers_per_thread, &K::shared_mem_bytes, &K::bytes);
  append_string_columns(out.kernels, in.kernels, remap, &K::name, &K::mangled);
  using L = LaunchTable;
  append_columns(out.launches, in.launches, &L::pid, &L::tid, &L::cpu_start_ns, &L::cpu_end_ns, &L::correlation,
                 &L::external_id);
  append_string_columns(out.launches, in.launches, remap, &L::api);
  using R = RangeTable;
  append_columns(out.ranges, in.ranges, &R::kind, &R::start_ns, &R::end_ns, &R::external_id, &R::depth, &R::sequence_nr,
                 &R::forward_thread);
  out.ranges.track.reserve(out.ranges.track.size() + in.ranges.size());
  for (std::uint32_t t : in.ranges.track) out.ranges.track.push_back(out.ranges.track_id(in.ranges.tracks()[t]));
  append_string_columns(out.ranges, in.ranges, remap, &R::text, &R::domain);
  for (const AutogradLink& a : in.autograd_links)
    out.autograd_links.push_back({a.forward_range + range_offset, a.backward_range + range_offset});
  for (CommunicationArgs c : in.communication_args) {
    c.range += range_offset;
    c.dtype = remap[c.dtype];
    c.process_group = remap[c.process_group];
    c.process_group_desc = remap[c.process_group_desc];
    c.collective = remap[c.collective];
    out.communication_args.push_back(c);
  }
  for (ProcessGroup g : in.process_groups) {
    if (g.pid == 0) g.pid = pid;
    g.name = remap[g.name];
    g.desc = remap[g.desc];
    g.backend = remap[g.backend];
    g.ranks = remap[g.ranks];
    out.process_groups.push_back(g);
  }
  return remap;
}

void append_attribution(AttributionTable& a, const AttributionTable& in, const std::vector<StrId>& remap,
                        std::uint32_t range_offset) {
  using A = AttributionTable;
  append_columns(a, in, &A::path, &A::confidence, &A::module_source, &A::opaque, &A::phase);
  for (std::uint32_t r : in.op_range) a.op_range.push_back(r == kNoIndex ? kNoIndex : r + range_offset);
  append_string_columns(a, in, remap, &A::op, &A::top_op, &A::module, &A::fused_ops, &A::fx_nodes, &A::provenance_handle,
                        &A::source_line, &A::family, &A::reason, &A::opaque_backend, &A::forward_op);
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The processes' profiles as one: timeline rows, attribution, the ncu match over the job's CSV and the
// counters per kernel, in the parts' order (aggregates and coverage are the caller's, after any propagation).
AttributeResult merge_parts(std::vector<Part>& parts, const std::vector<JobProcess>& processes,
                            const std::optional<NcuTable>& job_ncu) {
  AttributeResult out;
  out.capture.format = parts.front().result.capture.format;
  out.chip = parts.front().result.chip;
  out.metric_set = parts.front().result.metric_set;
  out.all_ranges = parts.front().result.all_ranges;
  Timeline& tl = out.capture.timeline;
  tl.metadata = parts.front().result.timeline().metadata;
  // The metric columns every process shares: those of the first process with counters.
  const KernelMetrics* metrics_of = nullptr;
  for (const Part& p : parts)
    if (p.result.ncu && !metrics_of) metrics_of = &p.result.kernel_metrics;
  if (metrics_of) {
    out.kernel_metrics.metrics = metrics_of->metrics;
    out.kernel_metrics.missing = metrics_of->missing;
    out.kernel_metrics.units = metrics_of->units;
    out.kernel_metrics.weight = metrics_of->weight;
  }
  const std::size_t m = out.kernel_metrics.metrics.size();
  if (job_ncu) {
    out.ncu = *job_ncu;
    out.match.emplace();
    out.match->kernel_for_ncu_row.assign(job_ncu->rows(), kNoIndex);
    out.match->launch_config_kernel_for_ncu_row.assign(job_ncu->rows(), kNoIndex);
    out.match->used_mangled_names = true;
  }
  std::vector<std::uint8_t> row_claimed(job_ncu ? job_ncu->rows() : 0, 0);

  for (Part& part : parts) {
    const AttributeResult& r = part.result;
    const std::string prefix = processes[part.process].label() + ": ";
    const auto kernel_offset = static_cast<std::uint32_t>(tl.kernels.size());
    part.kernel_offset = kernel_offset;
    const auto range_offset = static_cast<std::uint32_t>(tl.ranges.size());
    const std::vector<StrId> remap = append_timeline(tl, r.timeline(), processes[part.process].pid);
    append_attribution(out.attribution, r.attribution, remap, range_offset);
    for (const std::string& line : r.notes.lines) out.notes.lines.push_back(prefix + line);
    append(out.notes.operator_on_launch_path, r.notes.operator_on_launch_path);
    out.notes.anomalies.add(r.notes.anomalies, prefix);
    for (const auto& [key, value] : r.timeline().metadata)
      if (starts_with(key, "warning.")) tl.metadata[processes[part.process].folder + "." + key] = value;
    for (const auto& [key, value] : r.metadata)
      if (starts_with(key, "warning.")) out.metadata[processes[part.process].folder + "." + key] = value;

    const std::size_t n = r.timeline().kernels.size();
    if (m > 0) {
      if (r.ncu && r.kernel_metrics.metrics.size() == m) {
        append(out.kernel_metrics.values, r.kernel_metrics.values);
      } else {
        out.kernel_metrics.values.insert(out.kernel_metrics.values.end(), n * m, kNaN);
      }
    }
    if (!out.match) continue;
    NcuMatch& jm = *out.match;
    if (!r.match) {
      jm.ncu_row_for_kernel.insert(jm.ncu_row_for_kernel.end(), n, kNoIndex);
      for (std::size_t i = 0; i < n; ++i)
        if (r.timeline().kernels.kind[i] == ActivityKind::kKernel) jm.unmatched_kernels.push_back(kernel_offset + static_cast<std::uint32_t>(i));
      continue;
    }
    const NcuMatch& pm = *r.match;
    for (std::uint32_t row : pm.ncu_row_for_kernel) jm.ncu_row_for_kernel.push_back(row == kNoIndex ? kNoIndex : part.job_row[row]);
    for (std::size_t row = 0; row < pm.kernel_for_ncu_row.size(); ++row) {
      const std::uint32_t job_row = part.job_row[row];
      row_claimed[job_row] = 1;
      if (pm.kernel_for_ncu_row[row] != kNoIndex) jm.kernel_for_ncu_row[job_row] = pm.kernel_for_ncu_row[row] + kernel_offset;
      if (pm.launch_config_kernel_for_ncu_row[row] != kNoIndex)
        jm.launch_config_kernel_for_ncu_row[job_row] = pm.launch_config_kernel_for_ncu_row[row] + kernel_offset;
    }
    jm.matched += pm.matched;
    for (std::uint32_t row : pm.unmatched_rows) jm.unmatched_rows.push_back(part.job_row[row]);
    for (std::uint32_t k : pm.unmatched_kernels) jm.unmatched_kernels.push_back(k + kernel_offset);
    jm.grid_block_disagreements += pm.grid_block_disagreements;
    jm.launch_config_differs += pm.launch_config_differs;
    jm.strict_launch_config = jm.strict_launch_config || pm.strict_launch_config;
    jm.used_mangled_names = jm.used_mangled_names && pm.used_mangled_names;
    for (const std::string& note : pm.notes) jm.notes.push_back(prefix + note);
  }
  out.kernel_metrics.kernels = tl.kernels.size();
  if (out.match) {
    std::size_t orphans = 0;
    for (std::size_t row = 0; row < row_claimed.size(); ++row) {
      if (row_claimed[row]) continue;
      out.match->unmatched_rows.push_back(static_cast<std::uint32_t>(row));
      ++orphans;
    }
    if (orphans > 0)
      out.match->notes.push_back(fmt::format("{} ncu rows belong to no process of the job (pass B's pid matches no rank)", orphans));
  }
  return out;
}

// Cross-rank dedup: the ranks pass B did not replay take the representative's counters (plan_rank_dedup),
// marked in counters_from; they are no longer unmatched.
void propagate_across_ranks(const std::string& dir, AttributeResult& merged, const std::vector<Part>& parts,
                            const std::vector<JobProcess>& processes, const std::vector<std::int64_t>& counters_ranks,
                            bool ranks_given, ProgressObserver* observer) {
  const Timeline& tl = merged.timeline();
  std::vector<RankKernels> ranks;
  for (const Part& part : parts) {
    RankKernels r{processes[part.process].label(), processes[part.process].rank, {}};
    const Timeline& own = part.result.timeline();
    std::vector<std::uint32_t> order;
    for (std::uint32_t k = 0; k < own.kernels.size(); ++k)
      if (own.kernels.kind[k] == ActivityKind::kKernel) order.push_back(k);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return own.kernels.start_ns[a] < own.kernels.start_ns[b]; });
    for (std::uint32_t k : order) r.kernels.push_back(part.kernel_offset + k);
    ranks.push_back(std::move(r));
  }
  // The representative's counters are what the others take: a representative without ncu rows of its own
  // (a --counters-ranks that names a rank pass B did not replay) would give them nothing but NaN.
  // Named by the user, that is an input error; planned by opprof profile or read from the records, pass B
  // failed there: said, and the other ranks keep no counters.
  for (const Part& part : parts) {
    const JobProcess& p = processes[part.process];
    if (p.rank != counters_ranks.front() || p.ncu_rows > 0) continue;
    if (ranks_given)
      throw InputError(dir, fmt::format("cross-rank dedup: {}, whose counters the other ranks would take, has no ncu "
                                        "rows in the CSV (pass B did not replay it); name a rank that was replayed "
                                        "first in --counters-ranks",
                                        p.label()));
    if (observer)
      observer->on_attribute(progress::Warning{fmt::format(
          "cross-rank dedup: {} opened ncu's range in pass B but has no ncu rows: the ranks left out of pass B keep "
          "no counters",
          p.label())});
    return;
  }
  // A process with rows of its own (one without a rank, which every pass B replays; a rank the list
  // leaves out by mistake) counts as replayed: its counters are never overwritten by another rank's.
  std::vector<std::int64_t> replayed = counters_ranks;
  for (const Part& part : parts) {
    const JobProcess& p = processes[part.process];
    if (p.ncu_rows > 0 && std::find(replayed.begin(), replayed.end(), p.rank) == replayed.end()) replayed.push_back(p.rank);
  }
  DedupPlan plan = plan_rank_dedup(tl, ranks, replayed);
  for (const std::string& note : plan.notes)
    if (observer) observer->on_attribute(progress::Warning{"cross-rank dedup: " + note});
  if (!plan.active()) return;
  merged.propagation = propagate_counters(plan, merged.kernel_metrics);
  merged.dedup_deviation = verify_deviation(tl, plan, merged.kernel_metrics);
  for (const DedupClass& c : plan.classes)
    for (const DedupInstance& i : c.instances)
      if (!i.reason.empty() && observer) observer->on_attribute(progress::Warning{i.path + ": " + i.reason});
  if (merged.match) {
    const std::vector<std::uint32_t>& from = merged.kernel_metrics.counters_from;
    std::erase_if(merged.match->unmatched_kernels,
                  [&](std::uint32_t k) { return k < from.size() && from[k] != kNoIndex; });
  }
  merged.dedup = std::move(plan);
}

// The ranks whose pass B opened ncu's range, lowest first, when the counters records show that some rank's
// did not (cross-rank dedup, which `opprof profile` runs through OPPROF_COUNTERS_RANKS); else empty.
std::vector<std::int64_t> recorded_counters_ranks(const std::vector<JobProcess>& processes) {
  std::vector<std::int64_t> opened;
  bool some_not_opened = false;
  for (const JobProcess& p : processes) {
    if (p.rank == kNoRank) continue;
    if (p.counters_window == CountersWindow::kOpened) opened.push_back(p.rank);
    some_not_opened = some_not_opened || p.counters_window == CountersWindow::kNotOpened;
  }
  if (!some_not_opened) return {};
  std::sort(opened.begin(), opened.end());
  return opened;
}

}  // namespace

JobResult attribute_job(const JobRequest& request, ProgressObserver* observer) {
  const auto started = std::chrono::steady_clock::now();
  JobResult out;
  std::vector<JobProcess>& processes = out.job.processes;
  processes = find_job_processes(request.dir, request.trace_file);
  if (processes.empty())
    throw InputError(request.dir, fmt::format("no process folder ({}<R>/ or {}<P>/) in the capture directory",
                                              OPPROF_RANK_DIR_PREFIX, OPPROF_PROCESS_DIR_PREFIX));
  std::vector<std::string> job_notes;
  std::optional<NcuTable> job_ncu;
  if (!request.request.ncu.empty()) {
    job_ncu = read_ncu_csv(request.request.ncu);
    pair_counters_processes(processes, *job_ncu, job_notes);
  }

  std::vector<Part> parts;
  for (std::size_t i = 0; i < processes.size(); ++i) {
    JobProcess& p = processes[i];
    if (p.trace.empty()) continue;
    AttributeRequest one = request.request;
    one.trace = p.trace;
    one.inductor = p.inductor;
    one.output.clear();
    one.ncu.clear();
    Part part{i, {}, {}};
    NcuTable rows;
    if (job_ncu) {
      rows = rows_of_process(*job_ncu, p.counters_pid, part.job_row);
      p.ncu_rows = rows.rows();
      if (rows.rows() > 0) one.ncu_rows = &rows;
    }
    try {
      TimelineCapture timeline = read_capture_timeline(p.trace, observer);
      if (timeline.timeline.kernels.size() == 0) {  // a launcher that initialized CUDA and ran nothing
        p.status = "idle";
        p.problem = "no GPU activity in its timeline";
        continue;
      }
      part.result = attribute_capture(std::move(timeline), one, observer);
    } catch (const InputError& e) {
      p.status = "failed";
      p.problem = e.what();
      continue;
    }
    const auto& meta = part.result.timeline().metadata;
    if (meta.count("warning.truncated") || meta.count("warning.no_trailer")) {
      p.status = "truncated";
      p.problem = meta.count("warning.truncated") ? meta.at("warning.truncated") : meta.at("warning.no_trailer");
    }
    for (std::size_t k = 0; k < part.result.timeline().kernels.size(); ++k)
      p.kernels += part.result.timeline().kernels.kind[k] == ActivityKind::kKernel;
    parts.push_back(std::move(part));
  }
  if (parts.empty()) {
    std::string why;
    for (const JobProcess& p : processes) why += fmt::format("\n  {}: {} ({})", p.label(), p.status, p.problem);
    throw InputError(request.dir, "no process of the job has a timeline that can be attributed:" + why);
  }

  AttributeResult& merged = out.profile = merge_parts(parts, processes, job_ncu);
  std::vector<std::int64_t> counters_ranks = request.counters_ranks;
  if (job_ncu && counters_ranks.empty()) {
    counters_ranks = recorded_counters_ranks(processes);
    if (!counters_ranks.empty())
      job_notes.push_back(fmt::format("cross-rank dedup from the ranks' counters records: pass B opened ncu's range in "
                                      "rank {} only (--counters-ranks overrides)",
                                      fmt::join(counters_ranks, ", rank ")));
  }
  if (job_ncu && !counters_ranks.empty()) {
    const bool ranks_given = !request.counters_ranks.empty() && !request.counters_ranks_planned;
    propagate_across_ranks(request.dir, merged, parts, processes, counters_ranks, ranks_given, observer);
  }
  // Aggregates and coverage once, over the merged timeline with whatever counters it ended with.
  const Timeline& tl = merged.timeline();
  check_timeline_times(tl, request.dir);  // each process's times held; the job's sums must hold too
  merged.aggregates = aggregate(tl, merged.attribution, merged.kernel_metrics);
  merged.coverage =
      compute_coverage(tl, merged.attribution, merged.match ? &*merged.match : nullptr, merged.ncu ? merged.ncu->rows() : 0);
  // The collectives table points at their CPU ranges, which launch nothing: keep them in the database.
  const RangeTable& ranges = merged.timeline().ranges;
  for (std::size_t i = 0; i < ranges.size() && i < merged.notes.operator_on_launch_path.size(); ++i)
    if (is_communication_range(merged.timeline().str(ranges.text[i]))) merged.notes.operator_on_launch_path[i] = 1;
  auto& meta = merged.metadata;
  for (const auto& [key, value] : request.request.extra_metadata) meta[key] = value;
  meta["trace.format"] = to_string(merged.capture.format);
  meta["inputs.trace"] = fs::absolute(request.dir).string();
  if (job_ncu) meta["inputs.ncu"] = fs::absolute(request.request.ncu).string();
  meta["metric_set"] = merged.metric_set.source;
  meta["chip"] = merged.chip;
  meta["job.processes"] = std::to_string(processes.size());
  for (std::size_t i = 0; i < merged.notes.lines.size(); ++i) meta[fmt::format("note.attribution.{}", i)] = merged.notes.lines[i];
  for (std::size_t i = 0; i < job_notes.size(); ++i) meta[fmt::format("note.job.{}", i)] = job_notes[i];
  std::size_t problems = 0;
  for (const JobProcess& p : processes) {
    if (p.status == "ok" && p.problem.empty()) continue;
    const std::string text = fmt::format("{}: {}{}", p.label(), p.status == "ok" ? "" : p.status + ": ", p.problem);
    meta[fmt::format("warning.job.{}", problems++)] = text;
    if (observer) observer->on_attribute(progress::Warning{text});
  }
  out.job.figures = compute_job_figures(merged.timeline(), merged.attribution, processes);
  merged.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!request.request.output.empty()) write_profile(merged, request.request.output, observer, &out.job);
  return out;
}

}  // namespace opprof
