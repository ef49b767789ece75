#include "opprof/timeline/timeline.hpp"

#include <fmt/format.h>

#include "opprof/util/error.hpp"

namespace opprof {

void KernelTable::reserve(std::size_t n) {
  kind.reserve(n); name.reserve(n); mangled.reserve(n); pid.reserve(n); device.reserve(n);
  context.reserve(n); stream.reserve(n); start_ns.reserve(n); end_ns.reserve(n); grid.reserve(n);
  block.reserve(n); correlation.reserve(n); external_id.reserve(n); graph_id.reserve(n);
  graph_node.reserve(n); registers_per_thread.reserve(n); shared_mem_bytes.reserve(n); bytes.reserve(n);
}

std::size_t KernelTable::add(ActivityKind k, StrId kernel_name, std::uint32_t dev, std::uint32_t strm,
                             std::int64_t start, std::int64_t end) {
  kind.push_back(k); name.push_back(kernel_name); mangled.push_back(kNoString); pid.push_back(0);
  device.push_back(dev); context.push_back(0); stream.push_back(strm); start_ns.push_back(start);
  end_ns.push_back(end); grid.emplace_back(); block.emplace_back(); correlation.push_back(kNoCorrelation);
  external_id.push_back(0); graph_id.push_back(kNoGraph); graph_node.push_back(0);
  registers_per_thread.push_back(0); shared_mem_bytes.push_back(0); bytes.push_back(0);
  return name.size() - 1;
}

void LaunchTable::reserve(std::size_t n) {
  api.reserve(n); pid.reserve(n); tid.reserve(n); cpu_start_ns.reserve(n); cpu_end_ns.reserve(n);
  correlation.reserve(n); external_id.reserve(n);
}

std::size_t LaunchTable::add(StrId api_name, std::uint32_t process, std::uint64_t thread, std::int64_t start,
                             std::int64_t end, std::uint64_t corr) {
  api.push_back(api_name); pid.push_back(process); tid.push_back(thread); cpu_start_ns.push_back(start);
  cpu_end_ns.push_back(end); correlation.push_back(corr); external_id.push_back(0);
  return api.size() - 1;
}

void RangeTable::reserve(std::size_t n) {
  kind.reserve(n); track.reserve(n); text.reserve(n); domain.reserve(n); start_ns.reserve(n); end_ns.reserve(n);
  external_id.reserve(n); depth.reserve(n); sequence_nr.reserve(n); forward_thread.reserve(n);
}

std::uint32_t RangeTable::track_id(const RangeTrack& t) {
  if (last_track_ != kNoIndex && tracks_[last_track_] == t) return last_track_;
  auto [it, inserted] = track_ids_.try_emplace(t, static_cast<std::uint32_t>(tracks_.size()));
  if (inserted) tracks_.push_back(t);
  last_track_ = it->second;
  return it->second;
}

void RangeTable::set_pid(std::size_t i, std::uint32_t process) {
  RangeTrack t = track_of(i);
  t.pid = process;
  track[i] = track_id(t);
}

std::size_t RangeTable::add(RangeKind k, RangeScope s, StrId txt, StrId dom, std::uint32_t process,
                            std::uint64_t own, std::int64_t start, std::int64_t end, std::uint32_t dev) {
  kind.push_back(k); track.push_back(track_id({s, process, own, dev})); text.push_back(txt); domain.push_back(dom);
  start_ns.push_back(start); end_ns.push_back(end); external_id.push_back(0); depth.push_back(-1);
  sequence_nr.push_back(kNoSequenceNr); forward_thread.push_back(0);
  return text.size() - 1;
}

void check_timeline_times(const Timeline& tl, const std::string& source) {
  auto outside = [](std::int64_t t) { return t > kMaxTimelineTimeNs || t < -kMaxTimelineTimeNs; };
  auto refuse = [&](std::string_view what, std::size_t row, std::int64_t start, std::int64_t end) {
    throw InputError(source, fmt::format("{} {} lies at {} .. {} ns, outside the {} ns (146 years) either side of "
                                         "the clock's zero that opprof reads: not a time of real work",
                                         what, row, start, end, kMaxTimelineTimeNs));
  };
  const KernelTable& k = tl.kernels;
  std::int64_t total = 0;  // held at most kMaxTotalDurationNs, so the check below cannot overflow
  for (std::size_t i = 0; i < k.size(); ++i) {
    if (outside(k.start_ns[i]) || outside(k.end_ns[i])) refuse("GPU activity", i, k.start_ns[i], k.end_ns[i]);
    if (k.end_ns[i] < k.start_ns[i])
      throw InputError(source, fmt::format("GPU activity {} ends at {} ns, before it starts at {} ns", i, k.end_ns[i],
                                           k.start_ns[i]));
    const std::int64_t d = k.end_ns[i] - k.start_ns[i];  // both within ±(2^62 - 1): no overflow
    if (d > kMaxTotalDurationNs - total)
      throw InputError(source, fmt::format("the GPU activities' durations add up to more than {} ns (146 years): "
                                           "not the times of real work",
                                           kMaxTotalDurationNs));
    total += d;
  }
  const LaunchTable& l = tl.launches;
  for (std::size_t i = 0; i < l.size(); ++i)
    if (outside(l.cpu_start_ns[i]) || outside(l.cpu_end_ns[i])) refuse("launch", i, l.cpu_start_ns[i], l.cpu_end_ns[i]);
  const RangeTable& r = tl.ranges;
  for (std::size_t i = 0; i < r.size(); ++i)
    if (outside(r.start_ns[i]) || outside(r.end_ns[i])) refuse("range", i, r.start_ns[i], r.end_ns[i]);
}

}  // namespace opprof
