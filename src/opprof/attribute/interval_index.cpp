#include "opprof/attribute/interval_index.hpp"

#include <algorithm>

namespace opprof {

void IntervalIndex::build() {
  std::sort(items_.begin(), items_.end(), [](const Interval& a, const Interval& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  const auto n = static_cast<std::int64_t>(items_.size());
  max_end_.assign(items_.size(), 0);
  if (n == 0) {
    max_level_ = -1;
    return;
  }
  // Bottom-up over the implicit tree: leaves are the even indices, level-k nodes sit at
  // i0 = 2^k - 1 in steps of 2^(k+1). "last" tracks the max end of the rightmost, possibly partial, subtree
  // so that nodes whose right child lies beyond n still get a correct maximum.
  std::int64_t last_i = 0;
  std::int64_t last = 0;
  for (std::int64_t i = 0; i < n; i += 2) {
    last_i = i;
    max_end_[i] = last = items_[i].end;
  }
  int k = 1;
  for (; (std::int64_t{1} << k) <= n; ++k) {
    std::int64_t x = std::int64_t{1} << (k - 1);
    std::int64_t i0 = (x << 1) - 1;
    std::int64_t step = x << 2;
    for (std::int64_t i = i0; i < n; i += step) {
      std::int64_t el = max_end_[i - x];
      std::int64_t er = i + x < n ? max_end_[i + x] : last;
      max_end_[i] = std::max({items_[i].end, el, er});
    }
    last_i = (last_i >> k & 1) ? last_i : last_i - x;
    if (last_i < n && max_end_[last_i] > last) last = max_end_[last_i];
  }
  max_level_ = k - 1;
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
