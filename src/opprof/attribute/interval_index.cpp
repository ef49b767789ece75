#include "opprof/attribute/interval_index.hpp"

#include <algorithm>
#include <limits>

namespace opprof {

void IntervalIndex::build() {
  auto before = [](const Interval& a, const Interval& b) { return a.start != b.start ? a.start < b.start : a.end > b.end; };
  // Traces list a thread's ranges mostly in start order already: check before paying for a sort.
  if (!std::is_sorted(items_.begin(), items_.end(), before)) std::sort(items_.begin(), items_.end(), before);
  const auto n = static_cast<std::int64_t>(items_.size());
  max_end_.assign(items_.size(), 0);
  if (n == 0) {
    max_level_ = -1;
    return;
  }
  // Bottom-up over the implicit tree: leaves are the even indices, level-k nodes sit at
  // i0 = 2^k - 1 in steps of 2^(k+1). A node near the end of the array can have a right child beyond
  // it while part of that child's subtree exists: those existing indices are exactly the suffix
  // (i, n), so a suffix maximum gives their largest end.
  std::vector<std::int64_t> suffix_max(items_.size() + 1, std::numeric_limits<std::int64_t>::min());
  for (std::int64_t i = n - 1; i >= 0; --i) suffix_max[i] = std::max(items_[i].end, suffix_max[i + 1]);
  for (std::int64_t i = 0; i < n; i += 2) max_end_[i] = items_[i].end;
  int k = 1;
  for (; (std::int64_t{1} << k) <= n; ++k) {
    std::int64_t x = std::int64_t{1} << (k - 1);
    std::int64_t i0 = (x << 1) - 1;
    std::int64_t step = x << 2;
    for (std::int64_t i = i0; i < n; i += step) {
      std::int64_t el = max_end_[i - x];
      std::int64_t er = i + x < n ? max_end_[i + x] : suffix_max[i + 1];
      max_end_[i] = std::max({items_[i].end, el, er});
    }
  }
  max_level_ = k - 1;
}

IntervalIndex::Bounds IntervalIndex::innermost_and_outermost(std::int64_t lo, std::int64_t hi) const {
  Bounds b;
  for_each_containing(lo, hi, [&](const Interval& iv) {
    if (!b.inner || iv.start > b.inner->start || (iv.start == b.inner->start && iv.end < b.inner->end)) b.inner = &iv;
    if (!b.outer || iv.start < b.outer->start || (iv.start == b.outer->start && iv.end > b.outer->end)) b.outer = &iv;
  });
  return b;
}

const IntervalIndex::Interval* IntervalIndex::innermost(std::int64_t lo, std::int64_t hi) const {
  const Interval* best = nullptr;
  for_each_containing(lo, hi, [&](const Interval& iv) {
    if (!best || iv.start > best->start || (iv.start == best->start && iv.end < best->end)) best = &iv;
  });
  return best;
}

const IntervalIndex::Interval* IntervalIndex::outermost(std::int64_t lo, std::int64_t hi) const {
  const Interval* best = nullptr;
  for_each_containing(lo, hi, [&](const Interval& iv) {
    if (!best || iv.start < best->start || (iv.start == best->start && iv.end > best->end)) best = &iv;
  });
  return best;
}

}  // namespace opprof
