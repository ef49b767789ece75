#include "opprof/match/ncu_match.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "opprof/match/sequence_align.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

constexpr std::uint32_t kUnmatched = 0xffffffffu;
// Enough lines to read the shape of a divergence; the rest is summarised in one line.
constexpr std::size_t kMaxStretchNotes = 20;
constexpr std::size_t kNamesPerNote = 3;

// One process's kernels (timeline kernel rows or ncu rows) in invocation order.
struct ProcessSequence {
  std::uint32_t pid = 0;
  std::vector<std::uint32_t> items;
};

// The CPU timestamps of the timeline's launches, looked up by process and correlation id.
class LaunchTimes {
 public:
  explicit LaunchTimes(const Timeline& tl) {
    keys_.reserve(tl.launches.size());
    for (std::size_t i = 0; i < tl.launches.size(); ++i)
      if (tl.launches.correlation[i] != kNoCorrelation)
        keys_.emplace_back(tl.launches.pid[i], tl.launches.correlation[i], tl.launches.cpu_start_ns[i]);
    std::sort(keys_.begin(), keys_.end());
  }
  // The earliest launch of that process and correlation id; none for kNoCorrelation or an unknown pair.
  std::optional<std::int64_t> find(std::uint32_t pid, std::uint64_t correlation) const {
    if (correlation == kNoCorrelation) return std::nullopt;
    auto it = std::lower_bound(keys_.begin(), keys_.end(),
                               Key{pid, correlation, std::numeric_limits<std::int64_t>::min()});
    if (it == keys_.end() || std::get<0>(*it) != pid || std::get<1>(*it) != correlation) return std::nullopt;
    return std::get<2>(*it);
  }

 private:
  using Key = std::tuple<std::uint32_t, std::uint64_t, std::int64_t>;  // pid, correlation id, CPU start
  std::vector<Key> keys_;
};

// Timeline kernels (kind kernel) per process in launch order: the CPU timestamp of the launch with the same
// process and correlation id, else the kernel's own start. Launch order is the order ncu replays in; start
// order differs when streams run concurrently. Processes come in order of their first launch.
std::vector<ProcessSequence> timeline_in_launch_order(const Timeline& tl) {
  const LaunchTimes launch_times(tl);
  struct Entry {
    std::uint32_t pid;
    std::int64_t order_time;
    std::int64_t start;
    std::uint32_t row;
  };
  std::vector<Entry> entries;
  entries.reserve(tl.kernels.size());
  for (std::size_t k = 0; k < tl.kernels.size(); ++k) {
    if (tl.kernels.kind[k] != ActivityKind::kKernel) continue;
    const std::int64_t start = tl.kernels.start_ns[k];
    const std::uint32_t pid = tl.kernels.pid[k];
    entries.push_back({pid, launch_times.find(pid, tl.kernels.correlation[k]).value_or(start), start,
                       static_cast<std::uint32_t>(k)});
  }
  // Kernels of one launch (a CUDA graph) keep their start order.
  std::sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) {
    return std::tie(x.pid, x.order_time, x.start, x.row) < std::tie(y.pid, y.order_time, y.start, y.row);
  });

  std::vector<ProcessSequence> processes;
  std::vector<std::int64_t> first_time;
  for (const Entry& e : entries) {
    if (processes.empty() || processes.back().pid != e.pid) {
      processes.push_back({e.pid, {}});
      first_time.push_back(e.order_time);
    }
    processes.back().items.push_back(e.row);
  }
  std::vector<std::size_t> order(processes.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return first_time[x] < first_time[y]; });
  std::vector<ProcessSequence> sorted;
  sorted.reserve(processes.size());
  for (std::size_t i : order) sorted.push_back(std::move(processes[i]));
  return sorted;
}

// ncu rows per process in ID order; processes in order of their first row.
std::vector<ProcessSequence> ncu_in_id_order(const NcuTable& ncu) {
  std::vector<std::uint32_t> rows(ncu.rows());
  std::iota(rows.begin(), rows.end(), 0u);
  if (!std::is_sorted(ncu.id.begin(), ncu.id.end())) {
    std::stable_sort(rows.begin(), rows.end(), [&](std::uint32_t x, std::uint32_t y) { return ncu.id[x] < ncu.id[y]; });
  }
  std::vector<ProcessSequence> processes;
  std::unordered_map<std::uint32_t, std::size_t> index_of_pid;
  for (std::uint32_t r : rows) {
    auto [it, inserted] = index_of_pid.try_emplace(ncu.pid[r], processes.size());
    if (inserted) processes.push_back({ncu.pid[r], {}});
    processes[it->second].items.push_back(r);
  }
  return processes;
}

// Which timeline process each ncu process replays. The same pids pair directly (a capture and its replay
// in one run); otherwise, as with every ncu replay run as a separate process, by order of first appearance.
std::vector<std::pair<std::size_t, std::size_t>> pair_processes(const std::vector<ProcessSequence>& timeline,
                                                                const std::vector<ProcessSequence>& ncu,
                                                                std::vector<std::string>& notes) {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  std::unordered_set<std::uint32_t> timeline_pids, ncu_pids;
  for (const auto& p : timeline) timeline_pids.insert(p.pid);
  for (const auto& p : ncu) ncu_pids.insert(p.pid);
  if (timeline_pids == ncu_pids) {
    for (std::size_t t = 0; t < timeline.size(); ++t) {
      for (std::size_t n = 0; n < ncu.size(); ++n) {
        if (timeline[t].pid == ncu[n].pid) pairs.emplace_back(t, n);
      }
    }
    return pairs;
  }
  const std::size_t common = std::min(timeline.size(), ncu.size());
  for (std::size_t i = 0; i < common; ++i) pairs.emplace_back(i, i);
  if (timeline.size() > 1 || ncu.size() > 1) {
    for (std::size_t i = 0; i < common; ++i) {
      notes.push_back(fmt::format("timeline process {} is paired with ncu process {} (order of first appearance)",
                                  timeline[i].pid, ncu[i].pid));
    }
    for (std::size_t i = common; i < timeline.size(); ++i) {
      notes.push_back(fmt::format("timeline process {} ({} kernels) has no ncu process", timeline[i].pid,
                                  timeline[i].items.size()));
    }
    for (std::size_t i = common; i < ncu.size(); ++i) {
      notes.push_back(
          fmt::format("ncu process {} ({} rows) has no timeline process", ncu[i].pid, ncu[i].items.size()));
    }
  }
  return pairs;
}

struct IdentityKey {
  std::uint32_t name = 0;
  Dim3 grid;
  Dim3 block;
  bool operator==(const IdentityKey&) const = default;
};

struct IdentityKeyHash {
  std::size_t operator()(const IdentityKey& k) const noexcept {
    std::uint64_t h = k.name;
    for (std::uint32_t v : {k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z}) {
      h = (h ^ v) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
    }
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

// Interns kernel identities to dense ints so sequences compare as integers.
class IdentityInterner {
 public:
  IdentityInterner(const Timeline& tl, const NcuTable& ncu, bool use_mangled, bool use_dims)
      : tl_(tl), ncu_(ncu), use_mangled_(use_mangled), use_dims_(use_dims),
        name_of_timeline_string_(tl.strings.size(), kUnmatched) {}

  std::uint32_t timeline_kernel(std::uint32_t k) {
    StrId text = timeline_text(k);
    std::uint32_t& name = name_of_timeline_string_[text];
    if (name == kUnmatched) name = name_id(tl_.str(text));
    return identity(name, tl_.kernels.grid[k], tl_.kernels.block[k]);
  }

  std::uint32_t ncu_row(std::uint32_t r) {
    std::string_view text = ncu_.kernel_name[r];
    auto it = name_of_ncu_text_.find(text);
    std::uint32_t name = it != name_of_ncu_text_.end() ? it->second : name_id(text);
    if (it == name_of_ncu_text_.end()) name_of_ncu_text_.emplace(text, name);
    return identity(name, ncu_.grid[r], ncu_.block[r]);
  }

  // The name a timeline kernel is identified by: its mangled name in mangled mode, else its printed name
  // (which a tracer may also have left mangled: kernel_match_name demangles it).
  StrId timeline_text(std::uint32_t k) const {
    if (use_mangled_ || tl_.kernels.name[k] == kNoString) return tl_.kernels.mangled[k];
    return tl_.kernels.name[k];
  }

 private:
  std::uint32_t name_id(std::string_view text) {
    std::string key = use_mangled_ ? std::string(text) : kernel_match_name(text);
    auto [it, inserted] = names_.try_emplace(std::move(key), static_cast<std::uint32_t>(names_.size()));
    return it->second;
  }

  std::uint32_t identity(std::uint32_t name, Dim3 grid, Dim3 block) {
    IdentityKey key{name, use_dims_ ? grid : Dim3{}, use_dims_ ? block : Dim3{}};
    auto [it, inserted] = identities_.try_emplace(key, static_cast<std::uint32_t>(identities_.size()));
    return it->second;
  }

  const Timeline& tl_;
  const NcuTable& ncu_;
  bool use_mangled_;
  bool use_dims_;
  std::vector<std::uint32_t> name_of_timeline_string_;
  std::unordered_map<std::string_view, std::uint32_t> name_of_ncu_text_;
  std::unordered_map<std::string, std::uint32_t> names_;
  std::unordered_map<IdentityKey, std::uint32_t, IdentityKeyHash> identities_;
};

// ncu replays with --print-kernel-base mangled print symbols: C++ ones start with _Z, and no symbol has the
// parentheses or spaces of a demangled signature (extern "C" names such as Triton's look the same either way).
bool ncu_names_are_mangled(const NcuTable& ncu) {
  bool any_mangled = false;
  for (const std::string& name : ncu.kernel_name) {
    if (name.find_first_of("( ") != std::string::npos) return false;
    any_mangled = any_mangled || starts_with(name, "_Z");
  }
  return any_mangled;
}

// A run of consecutive unmatched positions in one side's sequence.
struct Stretch {
  std::size_t begin = 0, end = 0;  // positions in the process sequence
  std::size_t gap = 0;             // matched positions before it: the same gap on both sides when aligned
};

std::vector<Stretch> unmatched_stretches(const std::vector<std::uint32_t>& partner) {
  std::vector<Stretch> out;
  std::size_t matched_before = 0;
  for (std::size_t i = 0; i < partner.size();) {
    if (partner[i] != kUnmatched) {
      ++matched_before;
      ++i;
      continue;
    }
    Stretch s{i, i, matched_before};
    while (i < partner.size() && partner[i] == kUnmatched) ++i;
    s.end = i;
    out.push_back(s);
  }
  return out;
}

std::string dims_text(Dim3 d) { return fmt::format("{}x{}x{}", d.x, d.y, d.z); }

// The distinct (name, timeline configuration, ncu configuration) triples of the pairs matched by name alone,
// for the note that says which kernels they were.
class LaunchConfigExamples {
 public:
  void add(const Timeline& tl, const NcuTable& ncu, std::uint32_t k, std::uint32_t r) {
    std::string line = fmt::format("{} grid {} block {} in the timeline, grid {} block {} in ncu",
                                   kernel_base_name(ncu.kernel_name[r]), dims_text(tl.kernels.grid[k]),
                                   dims_text(tl.kernels.block[k]), dims_text(ncu.grid[r]), dims_text(ncu.block[r]));
    auto [it, inserted] = count_.try_emplace(line, 0);
    if (inserted) order_.push_back(line);
    ++it->second;
  }
  std::string text() const {
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < order_.size() && i < kNamesPerNote; ++i)
      parts.push_back(fmt::format("{} ({}x)", order_[i], count_.at(order_[i])));
    std::string out = join(parts, "; ");
    if (order_.size() > kNamesPerNote) out += fmt::format("; and {} more", order_.size() - kNamesPerNote);
    return out;
  }

 private:
  std::vector<std::string> order_;
  std::unordered_map<std::string, std::size_t> count_;
};

// Pairs (timeline position, ncu position) of equal names among the positions the full identities left
// unmatched. Ordered alignments pair within each gap between two matched neighbours (the same gap on both
// sides), by longest common subsequence; an unordered one pairs the k-th leftover occurrence of each name.
std::vector<std::pair<std::uint32_t, std::uint32_t>> pair_by_name_in_unmatched_stretches(
    const std::vector<std::uint32_t>& ncu_for_tl, const std::vector<std::uint32_t>& tl_for_ncu,
    const std::vector<std::uint32_t>& tl_names, const std::vector<std::uint32_t>& ncu_names, bool ordered) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  auto align = [&](const std::vector<std::uint32_t>& tl_pos, const std::vector<std::uint32_t>& ncu_pos, bool in_order) {
    if (tl_pos.empty() || ncu_pos.empty()) return;
    std::vector<std::uint32_t> a, b;
    for (std::uint32_t i : tl_pos) a.push_back(tl_names[i]);
    for (std::uint32_t j : ncu_pos) b.push_back(ncu_names[j]);
    std::optional<std::vector<std::uint32_t>> aligned;
    if (in_order) aligned = align_longest_common_subsequence(a, b);
    const std::vector<std::uint32_t> b_for_a = aligned ? std::move(*aligned) : pair_occurrences(a, b);
    for (std::size_t x = 0; x < b_for_a.size(); ++x)
      if (b_for_a[x] != kUnmatched) pairs.emplace_back(tl_pos[x], ncu_pos[b_for_a[x]]);
  };
  std::vector<std::uint32_t> tl_pos, ncu_pos;
  if (!ordered) {
    for (std::size_t i = 0; i < ncu_for_tl.size(); ++i)
      if (ncu_for_tl[i] == kUnmatched) tl_pos.push_back(static_cast<std::uint32_t>(i));
    for (std::size_t j = 0; j < tl_for_ncu.size(); ++j)
      if (tl_for_ncu[j] == kUnmatched) ncu_pos.push_back(static_cast<std::uint32_t>(j));
    align(tl_pos, ncu_pos, false);
    return pairs;
  }
  std::size_t i = 0, j = 0;
  const std::size_t n = ncu_for_tl.size(), m = tl_for_ncu.size();
  while (i < n || j < m) {
    tl_pos.clear();
    ncu_pos.clear();
    for (; i < n && ncu_for_tl[i] == kUnmatched; ++i) tl_pos.push_back(static_cast<std::uint32_t>(i));
    for (; j < m && tl_for_ncu[j] == kUnmatched; ++j) ncu_pos.push_back(static_cast<std::uint32_t>(j));
    align(tl_pos, ncu_pos, true);
    if (i >= n || j >= m) break;
    // Both now stand at the same matched pair (the alignment is ordered): step over it.
    ++i;
    ++j;
  }
  return pairs;
}

}  // namespace

NcuMatch match_ncu(const Timeline& timeline, const NcuTable& ncu, const NcuMatchOptions& options,
                   Anomalies* anomalies) {
  NcuMatch out;
  out.ncu_row_for_kernel.assign(timeline.kernels.size(), kNoIndex);
  out.kernel_for_ncu_row.assign(ncu.rows(), kNoIndex);
  out.launch_config_kernel_for_ncu_row.assign(ncu.rows(), kNoIndex);
  out.strict_launch_config = options.strict_launch_config;

  std::vector<ProcessSequence> tl_processes = timeline_in_launch_order(timeline);
  std::vector<ProcessSequence> ncu_processes = ncu_in_id_order(ncu);
  std::size_t timeline_kernels = 0;
  bool timeline_all_mangled = true;
  bool dims_known = true;
  for (const auto& p : tl_processes) {
    timeline_kernels += p.items.size();
    for (std::uint32_t k : p.items) {
      timeline_all_mangled = timeline_all_mangled && timeline.kernels.mangled[k] != kNoString;
      dims_known = dims_known && timeline.kernels.grid[k].known() && timeline.kernels.block[k].known();
    }
  }
  for (std::size_t r = 0; r < ncu.rows(); ++r) dims_known = dims_known && ncu.grid[r].known() && ncu.block[r].known();
  if (anomalies && !dims_known) {
    std::size_t kernels_without = 0, rows_without = 0;
    for (const auto& p : tl_processes)
      for (std::uint32_t k : p.items) kernels_without += !timeline.kernels.grid[k].known() || !timeline.kernels.block[k].known();
    for (std::size_t r = 0; r < ncu.rows(); ++r) rows_without += !ncu.grid[r].known() || !ncu.block[r].known();
    anomalies->record(AnomalyKind::kNcuMatchByNameOnly,
                      fmt::format("{} of {} timeline kernels and {} of {} ncu rows lack a grid or block: every kernel "
                                  "identity compares names alone",
                                  kernels_without, timeline_kernels, rows_without, ncu.rows()));
  }
  out.used_mangled_names = timeline_kernels > 0 && timeline_all_mangled && ncu_names_are_mangled(ncu);

  std::vector<std::string> process_notes;
  auto process_pairs = pair_processes(tl_processes, ncu_processes, process_notes);
  IdentityInterner interner(timeline, ncu, out.used_mangled_names, dims_known);
  // Names alone, for the stretches the full identities leave unmatched on both sides.
  IdentityInterner by_name(timeline, ncu, out.used_mangled_names, false);
  LaunchConfigExamples config_examples;

  struct PairAlignment {
    std::size_t tl_process, ncu_process;
    std::vector<std::uint32_t> ncu_for_tl;  // per timeline position, the ncu position
    std::vector<std::uint32_t> tl_for_ncu;
    std::vector<std::uint32_t> tl_identity, ncu_identity;
    bool ordered = true;  // false when matched by occurrence (pairs may cross)
  };
  std::vector<PairAlignment> alignments;
  std::vector<std::string> fallback_notes;
  for (auto [t, n] : process_pairs) {
    PairAlignment al{t, n, {}, {}, {}, {}, true};
    const auto& tl_items = tl_processes[t].items;
    const auto& ncu_items = ncu_processes[n].items;
    al.tl_identity.reserve(tl_items.size());
    for (std::uint32_t k : tl_items) al.tl_identity.push_back(interner.timeline_kernel(k));
    al.ncu_identity.reserve(ncu_items.size());
    for (std::uint32_t r : ncu_items) al.ncu_identity.push_back(interner.ncu_row(r));

    if (al.tl_identity == al.ncu_identity) {
      al.ncu_for_tl.resize(tl_items.size());
      std::iota(al.ncu_for_tl.begin(), al.ncu_for_tl.end(), 0u);
    } else if (auto aligned = align_longest_common_subsequence(al.tl_identity, al.ncu_identity)) {
      al.ncu_for_tl = std::move(*aligned);
    } else {
      al.ncu_for_tl = pair_occurrences(al.tl_identity, al.ncu_identity);
      al.ordered = false;
      if (anomalies)
        anomalies->record(AnomalyKind::kNcuPairedByOccurrence,
                          fmt::format("timeline process {} ({} kernels) and ncu process {} ({} rows)", tl_processes[t].pid,
                                      tl_items.size(), ncu_processes[n].pid, ncu_items.size()));
      fallback_notes.push_back(fmt::format(
          "timeline process {} ({} kernels) and ncu process {} ({} rows) differ too much to align (more than {} "
          "insertions and deletions, or more than {} search steps): paired the k-th occurrence of each kernel "
          "identity on both sides instead, without checking their order",
          tl_processes[t].pid, tl_items.size(), ncu_processes[n].pid, ncu_items.size(),
          AlignmentLimits{}.max_edit_distance, AlignmentLimits{}.max_steps));
    }
    al.tl_for_ncu.assign(ncu_items.size(), kUnmatched);
    for (std::size_t i = 0; i < al.ncu_for_tl.size(); ++i)
      if (al.ncu_for_tl[i] != kUnmatched) al.tl_for_ncu[al.ncu_for_tl[i]] = static_cast<std::uint32_t>(i);
    for (std::size_t i = 0; i < al.ncu_for_tl.size(); ++i) {
      std::uint32_t j = al.ncu_for_tl[i];
      if (j == kUnmatched) continue;
      const std::uint32_t k = tl_items[i];
      const std::uint32_t r = ncu_items[j];
      out.ncu_row_for_kernel[k] = r;
      out.kernel_for_ncu_row[r] = k;
      ++out.matched;
      const Dim3 tg = timeline.kernels.grid[k], tb = timeline.kernels.block[k];
      const bool comparable = tg.known() && tb.known() && ncu.grid[r].known() && ncu.block[r].known();
      if (comparable && (tg != ncu.grid[r] || tb != ncu.block[r])) ++out.grid_block_disagreements;
    }
    // Kernels of one name whose launch configuration differs between the runs: paired by name in the
    // stretches left over (grid and block are part of the identity only when both sides know them).
    if (dims_known) {
      std::vector<std::uint32_t> tl_names(tl_items.size()), ncu_names(ncu_items.size());
      for (std::size_t i = 0; i < tl_items.size(); ++i)
        if (al.ncu_for_tl[i] == kUnmatched) tl_names[i] = by_name.timeline_kernel(tl_items[i]);
      for (std::size_t j = 0; j < ncu_items.size(); ++j)
        if (al.tl_for_ncu[j] == kUnmatched) ncu_names[j] = by_name.ncu_row(ncu_items[j]);
      for (auto [i, j] : pair_by_name_in_unmatched_stretches(al.ncu_for_tl, al.tl_for_ncu, tl_names, ncu_names,
                                                              al.ordered)) {
        const std::uint32_t k = tl_items[i];
        const std::uint32_t r = ncu_items[j];
        out.launch_config_kernel_for_ncu_row[r] = k;
        ++out.launch_config_differs;
        config_examples.add(timeline, ncu, k, r);
        if (options.strict_launch_config) continue;
        al.ncu_for_tl[i] = j;
        al.tl_for_ncu[j] = i;
        out.ncu_row_for_kernel[k] = r;
        out.kernel_for_ncu_row[r] = k;
        ++out.matched;
      }
    }
    alignments.push_back(std::move(al));
  }

  for (std::size_t k = 0; k < timeline.kernels.size(); ++k) {
    if (timeline.kernels.kind[k] == ActivityKind::kKernel && out.ncu_row_for_kernel[k] == kNoIndex) {
      out.unmatched_kernels.push_back(static_cast<std::uint32_t>(k));
    }
  }
  for (std::size_t r = 0; r < ncu.rows(); ++r) {
    if (out.kernel_for_ncu_row[r] == kNoIndex) out.unmatched_rows.push_back(static_cast<std::uint32_t>(r));
  }

  const char* identity_words = out.used_mangled_names ? "exact mangled name, grid and block"
                               : dims_known          ? "kernel name, grid and block"
                                                     : "kernel name alone (grid or block unknown for some kernels)";
  // Pairs refused for their launch configuration still say the CSV belongs to this capture.
  const std::size_t paired = out.matched + (options.strict_launch_config ? out.launch_config_differs : 0);
  if (timeline_kernels > 0 && ncu.rows() > 0 && 2 * paired < timeline_kernels && 2 * paired < ncu.rows()) {
    throw InputError(ncu.path, fmt::format("the ncu CSV does not belong to this capture: only {} of {} timeline "
                                           "kernels (and of {} ncu rows) match by {} (was it recorded over another "
                                           "window?)",
                                           out.matched, timeline_kernels, ncu.rows(), identity_words));
  }

  out.notes.push_back(fmt::format("matched {} of {} timeline kernels and {} of {} ncu rows by {}", out.matched,
                                  timeline_kernels, out.matched, ncu.rows(), identity_words));
  for (auto& n : process_notes) out.notes.push_back(std::move(n));
  for (auto& n : fallback_notes) out.notes.push_back(std::move(n));
  if (out.grid_block_disagreements > 0) {
    out.notes.push_back(fmt::format("{} matched pairs disagree on grid or block", out.grid_block_disagreements));
  }
  if (out.launch_config_differs > 0) {
    out.notes.push_back(fmt::format(
        "{} ncu row{} {} a kernel of the same name and invocation order whose grid or block differ (another "
        "launch configuration of the same kernel: autotuned separately in the two runs?): {}{}",
        out.launch_config_differs, out.launch_config_differs == 1 ? "" : "s",
        options.strict_launch_config ? "were refused (--strict-launch-config) pairing with" : "matched",
        config_examples.text(), options.strict_launch_config ? "; they stay unmatched" : ""));
  }

  // One line per divergent stretch, in sequence order; a stretch on each side in the same gap of an ordered
  // alignment is one replacement and gets one line.
  auto names_of = [&](auto&& display_name, const std::vector<std::uint32_t>& identity_seq, const Stretch& s) {
    std::unordered_set<std::uint32_t> seen;
    std::vector<std::string> names;
    for (std::size_t i = s.begin; i < s.end; ++i) {
      if (!seen.insert(identity_seq[i]).second) continue;
      if (names.size() < kNamesPerNote) names.push_back(display_name(i));
    }
    std::string text = join(names, ", ");
    if (seen.size() > kNamesPerNote) text += fmt::format(" and {} more", seen.size() - kNamesPerNote);
    return text;
  };
  std::size_t stretch_notes = 0, unlisted_stretches = 0, unlisted_rows = 0, unlisted_kernels = 0;
  const bool several_pairs = alignments.size() > 1;
  for (const PairAlignment& al : alignments) {
    const auto& tl_items = tl_processes[al.tl_process].items;
    const auto& ncu_items = ncu_processes[al.ncu_process].items;
    auto ncu_part = [&](const Stretch& s) {
      const std::size_t rows = s.end - s.begin;
      std::string ids = rows == 1 ? fmt::format("ncu ID {}", ncu.id[ncu_items[s.begin]])
                                  : fmt::format("ncu IDs {}-{}", ncu.id[ncu_items[s.begin]], ncu.id[ncu_items[s.end - 1]]);
      auto name = [&](std::size_t i) { return kernel_base_name(ncu.kernel_name[ncu_items[i]]); };
      return fmt::format("{} ({} row{}: {})", ids, rows, rows == 1 ? "" : "s", names_of(name, al.ncu_identity, s));
    };
    auto tl_part = [&](const Stretch& s) {
      const std::size_t kernels = s.end - s.begin;
      std::string positions = kernels == 1 ? fmt::format("timeline kernel {}", s.begin + 1)
                                           : fmt::format("timeline kernels {}-{}", s.begin + 1, s.end);
      auto name = [&](std::size_t i) {
        return kernel_base_name(timeline.str(interner.timeline_text(tl_items[i])));
      };
      return fmt::format("{} of {} in launch order ({} kernel{}: {})", positions, tl_items.size(), kernels,
                         kernels == 1 ? "" : "s", names_of(name, al.tl_identity, s));
    };
    const std::string prefix = several_pairs ? fmt::format("timeline process {} / ncu process {}: ",
                                                           tl_processes[al.tl_process].pid,
                                                           ncu_processes[al.ncu_process].pid)
                                             : std::string();
    std::vector<Stretch> ncu_stretches = unmatched_stretches(al.tl_for_ncu);
    std::vector<Stretch> tl_stretches = unmatched_stretches(al.ncu_for_tl);
    std::size_t a = 0, b = 0;
    while (a < ncu_stretches.size() || b < tl_stretches.size()) {
      const Stretch* ns = a < ncu_stretches.size() ? &ncu_stretches[a] : nullptr;
      const Stretch* ts = b < tl_stretches.size() ? &tl_stretches[b] : nullptr;
      const bool together = al.ordered && ns && ts && ns->gap == ts->gap;
      const bool take_ncu = ns && (!ts || together || (al.ordered ? ns->gap <= ts->gap : true));
      const bool take_tl = ts && (together || !take_ncu);
      if (stretch_notes >= kMaxStretchNotes) {
        ++unlisted_stretches;
        if (take_ncu) unlisted_rows += ns->end - ns->begin;
        if (take_tl) unlisted_kernels += ts->end - ts->begin;
      } else if (together) {
        out.notes.push_back(fmt::format("{}{} and {} differ: neither has a counterpart", prefix, ncu_part(*ns), tl_part(*ts)));
        ++stretch_notes;
      } else if (take_ncu) {
        const bool one = ns->end - ns->begin == 1;
        out.notes.push_back(fmt::format("{}{} {} no timeline kernel", prefix, ncu_part(*ns), one ? "has" : "have"));
        ++stretch_notes;
      } else {
        const bool one = ts->end - ts->begin == 1;
        out.notes.push_back(fmt::format("{}{} {} no ncu row", prefix, tl_part(*ts), one ? "has" : "have"));
        ++stretch_notes;
      }
      if (take_ncu) ++a;
      if (take_tl) ++b;
    }
  }
  // Rows and kernels of processes that were not paired at all are in unmatched_rows/kernels; the process
  // notes above name them.
  if (unlisted_stretches > 0) {
    out.notes.push_back(fmt::format("... and {} more divergent stretches ({} ncu rows, {} timeline kernels) not listed",
                                    unlisted_stretches, unlisted_rows, unlisted_kernels));
  }
  return out;
}

}  // namespace opprof
