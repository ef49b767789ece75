#pragma once
// A static interval index answering stabbing queries ("which intervals contain t?") in O(log n + k):
// intervals sorted by start in one array, read as an implicit balanced binary tree whose nodes carry
// the largest end in their subtree (the layout of Heng Li's cgranges). Built once, queried many times,
// no pointers, 21 bytes per interval: a 10M-kernel trace indexes about 40M ranges, so every byte here is
// 40 MB of peak memory.
#include <cstdint>
#include <vector>

namespace opprof {

class IntervalIndex {
 public:
  // Packed to 20 bytes (the padding after id made 24): x86-64 and AArch64 load 8 bytes at any 4-byte
  // alignment at full speed. No one takes a member's address, so nothing else sees the packing.
#pragma pack(push, 4)
  struct Interval {
    std::int64_t start;
    std::int64_t end;  // inclusive: an interval contains t when start <= t <= end
    std::uint32_t id;
  };
#pragma pack(pop)
  static_assert(sizeof(Interval) == 20);

  void reserve(std::size_t n) { items_.reserve(n); }
  void add(std::int64_t start, std::int64_t end, std::uint32_t id) { items_.push_back({start, end, id}); }
  // Sorts and computes the subtree maxima. Call once after the last add and before any query.
  void build();
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }

  // Calls f(const Interval&) for every interval containing [lo, hi] (lo <= hi).
  template <typename F>
  void for_each_containing(std::int64_t lo, std::int64_t hi, F&& f) const;

  // The innermost interval containing [lo, hi]: the latest start, among equal starts the earliest end,
  // and among identical bounds the larger id (sources add an outer range before those nested in it).
  // Returns nullptr when none does.
  const Interval* innermost(std::int64_t lo, std::int64_t hi) const;
  // The outermost: the earliest start, and among equal starts the latest end.
  const Interval* outermost(std::int64_t lo, std::int64_t hi) const;
  // Both in one descent.
  struct Bounds {
    const Interval* inner = nullptr;
    const Interval* outer = nullptr;
  };
  Bounds innermost_and_outermost(std::int64_t lo, std::int64_t hi) const {
    return innermost_and_outermost(lo, hi, [](const Interval&) {});
  }
  // The same descent also calling each(const Interval&) for every interval containing [lo, hi].
  template <typename F>
  Bounds innermost_and_outermost(std::int64_t lo, std::int64_t hi, F&& each) const;

  // Whether a lies inside b among intervals that both contain a point: a later start, an earlier end, and
  // for identical bounds the later id (sources add an outer range before the ranges nested in it).
  static bool inner_than(const Interval& a, const Interval& b) {
    if (a.start != b.start) return a.start > b.start;
    if (a.end != b.end) return a.end < b.end;
    return a.id > b.id;
  }

 private:
  std::vector<Interval> items_;
  // Subtrees of level kScanLevel and below are scanned linearly, so only the nodes above keep the largest
  // end in their subtree: node x of level >= kScanLevel (its low kScanLevel bits all ones) at x >> kScanLevel.
  static constexpr int kScanLevel = 3;
  std::vector<std::int64_t> max_end_;
  int max_level_ = -1;
};

template <typename F>
void IntervalIndex::for_each_containing(std::int64_t lo, std::int64_t hi, F&& f) const {
  if (items_.empty()) return;
  // Iterative descent of the implicit tree (node x at level k covers [x - 2^k + 1, x + 2^k - 1]).
  struct Frame {
    std::int64_t x;
    int k;
    bool left_done;
  };
  Frame stack[64];
  int top = 0;
  const auto n = static_cast<std::int64_t>(items_.size());
  stack[top++] = {(std::int64_t{1} << max_level_) - 1, max_level_, false};
  while (top) {
    Frame z = stack[--top];
    if (z.k <= kScanLevel) {  // small subtree: scan it linearly
      std::int64_t i0 = z.x >> z.k << z.k;
      std::int64_t i1 = i0 + (std::int64_t{1} << (z.k + 1)) - 1;
      if (i1 >= n) i1 = n;
      for (std::int64_t i = i0; i < i1 && items_[i].start <= lo; ++i)
        if (items_[i].end >= hi) f(items_[i]);
    } else if (!z.left_done) {
      std::int64_t y = z.x - (std::int64_t{1} << (z.k - 1));  // left child
      stack[top++] = {z.x, z.k, true};
      if (y >= n || max_end_[y >> kScanLevel] >= hi) stack[top++] = {y, z.k - 1, false};
    } else if (z.x < n && items_[z.x].start <= lo) {
      if (items_[z.x].end >= hi) f(items_[z.x]);
      stack[top++] = {z.x + (std::int64_t{1} << (z.k - 1)), z.k - 1, false};  // right child
    }
  }
}

template <typename F>
IntervalIndex::Bounds IntervalIndex::innermost_and_outermost(std::int64_t lo, std::int64_t hi, F&& each) const {
  Bounds b;
  for_each_containing(lo, hi, [&](const Interval& iv) {
    if (!b.inner || inner_than(iv, *b.inner)) b.inner = &iv;
    if (!b.outer || inner_than(*b.outer, iv)) b.outer = &iv;
    each(iv);
  });
  return b;
}

}  // namespace opprof
