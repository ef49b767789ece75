#include "opprof/attribute/range_indexes.hpp"

#include <vector>

namespace opprof {

ThreadRangeIndexes build_thread_range_indexes(const Timeline& tl) {
  ThreadRangeIndexes out;
  const RangeTable& r = tl.ranges;
  // The index of a range's kind in its thread's set, or null for kinds that are not indexed.
  auto index_in = [](ThreadRangeIndexes::PerThread& t, RangeKind kind) -> IntervalIndex* {
    switch (kind) {
      case RangeKind::kOperator: return &t.ops;
      case RangeKind::kModule: return &t.modules;
      case RangeKind::kAnnotation: return &t.annotations;
      case RangeKind::kCompiledRegion: return &t.regions;
      default: return nullptr;
    }
  };
  // Each thread track's set, looked up once: ranges name their track by index.
  std::vector<ThreadRangeIndexes::PerThread*> set_of_track(r.tracks().size(), nullptr);
  for (std::size_t t = 0; t < r.tracks().size(); ++t)
    if (const RangeTrack& track = r.tracks()[t]; track.scope == RangeScope::kThread)
      set_of_track[t] = &out.threads[{track.pid, track.owner}];  // unordered_map nodes do not move
  // Two passes: the first sizes every index, so that tens of millions of ranges are not copied while
  // their vectors double (a 10M-kernel trace's 40M ranges: a GB of intervals, and as much again in growth).
  auto for_each_indexed = [&](auto&& f) {
    for (std::size_t i = 0; i < r.size(); ++i)
      if (ThreadRangeIndexes::PerThread* thread = set_of_track[r.track[i]])
        if (IntervalIndex* index = index_in(*thread, r.kind[i])) f(*index, i);
  };
  std::unordered_map<IntervalIndex*, std::size_t> sizes;
  for_each_indexed([&](IntervalIndex& index, std::size_t) { ++sizes[&index]; });
  for (const auto& [index, n] : sizes) index->reserve(n);
  for_each_indexed([&](IntervalIndex& index, std::size_t i) {
    index.add(r.start_ns[i], r.end_ns[i], static_cast<std::uint32_t>(i));
  });
  for (auto& [key, t] : out.threads) {
    t.ops.build();
    t.modules.build();
    t.regions.build();
    t.annotations.build();
  }
  return out;
}

}  // namespace opprof
