#include "opprof/attribute/range_indexes.hpp"

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
  // Ranges come grouped by thread, so the last thread's set is the next range's most of the time.
  ThreadRangeIndexes::Key last_key{0, 0};
  ThreadRangeIndexes::PerThread* last = nullptr;
  auto thread_of = [&](std::size_t i) -> ThreadRangeIndexes::PerThread& {
    const ThreadRangeIndexes::Key key{r.pid(i), r.owner(i)};
    if (!last || !(key == last_key)) {
      last = &out.threads[key];  // unordered_map nodes do not move
      last_key = key;
    }
    return *last;
  };
  // Two passes: the first sizes every index, so that tens of millions of ranges are not copied while
  // their vectors double (a 10M-kernel trace's 40M ranges: a GB of intervals, and as much again in growth).
  auto for_each_indexed = [&](auto&& f) {
    for (std::size_t i = 0; i < r.size(); ++i)
      if (r.scope(i) == RangeScope::kThread)
        if (IntervalIndex* index = index_in(thread_of(i), r.kind[i])) f(*index, i);
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
