#include "opprof/attribute/interval_index.hpp"

#include <algorithm>
#include <limits>

namespace opprof {
namespace {
// Whether a lies inside b among intervals that both contain a point: a later start, an earlier end, and
// for identical bounds the later id (sources add an outer range before the ranges nested in it).
bool inner_than(const IntervalIndex::Interval& a, const IntervalIndex::Interval& b) {
  if (a.start != b.start) return a.start > b.start;
  if (a.end != b.end) return a.end < b.end;
  return a.id > b.id;
}
}  // namespace

void IntervalIndex::build() {
  auto before = [](const Interval& a, const Interval& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.end != b.end) return a.end > b.end;
    return a.id < b.id;
  };
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
    if (!b.inner || inner_than(iv, *b.inner)) b.inner = &iv;
    if (!b.outer || inner_than(*b.outer, iv)) b.outer = &iv;
  });
  return b;
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
