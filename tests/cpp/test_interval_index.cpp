#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "opprof/attribute/interval_index.hpp"

using opprof::IntervalIndex;

namespace {
std::set<std::uint32_t> brute_force(const std::vector<IntervalIndex::Interval>& all, std::int64_t lo, std::int64_t hi) {
  std::set<std::uint32_t> out;
  for (const auto& iv : all)
    if (iv.start <= lo && iv.end >= hi) out.insert(iv.id);
  return out;
}
}  // namespace

TEST(IntervalIndex, EmptyIndexFindsNothing) {
  IntervalIndex idx;
  idx.build();
  EXPECT_EQ(idx.innermost(5, 5), nullptr);
}

TEST(IntervalIndex, NestedRangesInnermostAndOutermost) {
  IntervalIndex idx;
  idx.add(0, 100, 1);   // module
  idx.add(10, 50, 2);   // operator
  idx.add(20, 30, 3);   // nested operator
  idx.add(60, 90, 4);   // sibling
  idx.build();
  ASSERT_NE(idx.innermost(25, 25), nullptr);
  EXPECT_EQ(idx.innermost(25, 25)->id, 3u);
  EXPECT_EQ(idx.outermost(25, 25)->id, 1u);
  EXPECT_EQ(idx.innermost(40, 45)->id, 2u);
  EXPECT_EQ(idx.innermost(55, 55)->id, 1u);
  EXPECT_EQ(idx.innermost(70, 95)->id, 1u);  // [70,95] leaves the sibling, stays in the module
  EXPECT_EQ(idx.innermost(101, 101), nullptr);
  EXPECT_EQ(idx.innermost(100, 100)->id, 1u);  // ends are inclusive
}

TEST(IntervalIndex, MatchesBruteForceOnRandomIntervals) {
  std::mt19937_64 rng(42);
  // Every size up to 300 and a few larger: the nodes above the scanned levels keep subtree maxima, and a
  // node near the end may have a right child past the array, whose existing part (80..87 of 84, say) only a
  // scan sees.
  std::vector<int> sizes;
  for (int n = 1; n <= 300; ++n) sizes.push_back(n);
  for (int n : {1000, 1023, 1025, 4097, 5000}) sizes.push_back(n);
  for (int n : sizes) {
    std::vector<IntervalIndex::Interval> all;
    IntervalIndex idx;
    for (int i = 0; i < n; ++i) {
      std::int64_t s = static_cast<std::int64_t>(rng() % 10000);
      // Mostly short, some spanning much of the range: the subtree maxima must carry a long one far.
      std::int64_t len = static_cast<std::int64_t>(rng() % 16 == 0 ? rng() % 10000 : rng() % 500);
      all.push_back({s, s + len, static_cast<std::uint32_t>(i)});
      idx.add(s, s + len, static_cast<std::uint32_t>(i));
    }
    idx.build();
    for (int q = 0; q < 200; ++q) {
      std::int64_t lo = static_cast<std::int64_t>(rng() % 10600) - 100;
      std::int64_t hi = lo + static_cast<std::int64_t>(rng() % 50);
      std::set<std::uint32_t> got;
      idx.for_each_containing(lo, hi, [&](const IntervalIndex::Interval& iv) { got.insert(iv.id); });
      ASSERT_EQ(got, brute_force(all, lo, hi)) << "n=" << n << " lo=" << lo << " hi=" << hi;
    }
  }
}

TEST(IntervalIndex, IdenticalBoundsNestByInsertionOrder) {
  // A tracer projects a captured range stack onto a replayed kernel: every range has the kernel's bounds.
  IntervalIndex idx;
  idx.add(100, 200, 5);  // outermost, added first
  idx.add(100, 200, 6);
  idx.add(100, 200, 7);  // innermost
  idx.build();
  EXPECT_EQ(idx.innermost(150, 150)->id, 7u);
  EXPECT_EQ(idx.outermost(150, 150)->id, 5u);
  auto both = idx.innermost_and_outermost(100, 200);
  EXPECT_EQ(both.inner->id, 7u);
  EXPECT_EQ(both.outer->id, 5u);
}
