#include "opprof/attribute/interval_index.hpp"

#include <algorithm>
#include <limits>

namespace opprof {
void IntervalIndex::build() {
  auto before = [](const Interval& a, const Interval& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.end != b.end) return a.end > b.end;
    return a.id < b.id;
  };
  // Traces list a thread's ranges mostly in start order already: check before paying for a sort.
  if (!std::is_sorted(items_.begin(), items_.end(), before)) std::sort(items_.begin(), items_.end(), before);
  const auto n = static_cast<std::int64_t>(items_.size());
  max_end_.clear();
  max_end_.shrink_to_fit();
  if (n == 0) {
    max_level_ = -1;
    return;
  }
  int top = 0;  // the root's level: the largest k with 2^k <= n
  while ((std::int64_t{2} << top) <= n) ++top;
  max_level_ = top;
  if (top <= kScanLevel) return;  // every query scans the whole array
  // Level-k nodes sit at 2^k - 1 in steps of 2^(k+1) and cover [x - 2^k + 1, x + 2^k - 1]. Those of level
  // kScanLevel take the largest end of their subtree by a scan; each higher level, bottom-up, from its
  // children. A node near the array's end can have a right child beyond it while part of that child's
  // subtree exists: those existing indices are exactly (x, n), scanned (at most one such node per level).
  max_end_.assign(static_cast<std::size_t>(n >> kScanLevel) + 1, std::numeric_limits<std::int64_t>::min());
  auto stored = [&](std::int64_t x) -> std::int64_t& { return max_end_[static_cast<std::size_t>(x >> kScanLevel)]; };
  auto scan_max = [&](std::int64_t from, std::int64_t to) {  // largest end in [from, to)
    std::int64_t m = std::numeric_limits<std::int64_t>::min();
    // Not std::max: it would bind a reference to a packed member.
    for (std::int64_t i = from; i < to; ++i)
      if (items_[i].end > m) m = items_[i].end;
    return m;
  };
  {
    const std::int64_t half = (std::int64_t{1} << kScanLevel) - 1;
    for (std::int64_t x = half; x < n; x += std::int64_t{2} << kScanLevel)
      stored(x) = scan_max(x - half, std::min(n, x + half + 1));
  }
  for (int k = kScanLevel + 1; k <= top; ++k) {
    const std::int64_t half = std::int64_t{1} << (k - 1);  // distance to either child
    for (std::int64_t x = (std::int64_t{1} << k) - 1; x < n; x += std::int64_t{2} << k) {
      const std::int64_t right = x + half < n ? stored(x + half) : scan_max(x + 1, n);
      stored(x) = std::max({items_[x].end, stored(x - half), right});
    }
  }
}

const IntervalIndex::Interval* IntervalIndex::innermost(std::int64_t lo, std::int64_t hi) const {
  const Interval* best = nullptr;
  for_each_containing(lo, hi, [&](const Interval& iv) {
    if (!best || inner_than(iv, *best)) best = &iv;
  });
  return best;
}

const IntervalIndex::Interval* IntervalIndex::outermost(std::int64_t lo, std::int64_t hi) const {
  const Interval* best = nullptr;
  for_each_containing(lo, hi, [&](const Interval& iv) {
    if (!best || inner_than(*best, iv)) best = &iv;
  });
  return best;
}

}  // namespace opprof
