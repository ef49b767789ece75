#include "opprof/match/sequence_align.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>

namespace opprof {
namespace {

constexpr std::uint32_t kUnmatched = 0xffffffffu;

struct LimitReached {};

// Half-open ranges [a0, a1) of a and [b0, b1) of b still to be aligned.
struct Range {
  std::int64_t a0, a1, b0, b1;
};

// Myers' algorithm in the form of "An O(ND) Difference Algorithm and Its Variations" section 4b: find a
// point on an optimal edit path by running the greedy search from both ends until the paths overlap, then
// solve the two halves. Memory stays linear; time is O((N+M)D). Common prefixes and suffixes are matched
// directly at every step, which makes equal or nearly equal sequences O(N+M).
// Eq: bool(std::size_t i, std::size_t j), whether element i of a equals element j of b.
template <typename Eq>
class MyersAligner {
 public:
  MyersAligner(std::size_t a_size, std::size_t b_size, Eq eq, const AlignmentLimits& limits)
      : a_size_(a_size), b_size_(b_size), eq_(std::move(eq)), max_steps_(limits.max_steps) {
    const auto n = static_cast<std::int64_t>(a_size);
    const auto m = static_cast<std::int64_t>(b_size);
    // Each half of the search covers half of the edit distance; one more step finds the overlap.
    d_cap_ = std::min<std::int64_t>((n + m + 1) / 2, static_cast<std::int64_t>(limits.max_edit_distance / 2 + 1));
    offset_ = d_cap_ + 1;
    forward_.assign(static_cast<std::size_t>(2 * d_cap_ + 3), -1);
    reverse_.assign(forward_.size(), -1);
  }

  std::vector<std::uint32_t> run() {
    std::vector<std::uint32_t> b_for_a(a_size_, kUnmatched);
    std::vector<Range> todo{{0, static_cast<std::int64_t>(a_size_), 0, static_cast<std::int64_t>(b_size_)}};
    while (!todo.empty()) {
      Range r = todo.back();
      todo.pop_back();
      while (r.a1 > r.a0 && r.b1 > r.b0 && same(r.a1 - 1, r.b1 - 1)) {
        --r.a1;
        --r.b1;
        b_for_a[static_cast<std::size_t>(r.a1)] = static_cast<std::uint32_t>(r.b1);
      }
      while (r.a0 < r.a1 && r.b0 < r.b1 && same(r.a0, r.b0)) {
        b_for_a[static_cast<std::size_t>(r.a0)] = static_cast<std::uint32_t>(r.b0);
        ++r.a0;
        ++r.b0;
      }
      if (r.a0 == r.a1 || r.b0 == r.b1) continue;
      auto split = split_point(r);
      if (!split) continue;  // nothing in common: every element of the range stays unmatched
      auto [x, y] = *split;
      // Both halves are strictly smaller for an edit distance of 2 or more, which a range whose first and
      // last elements differ always has; a split at a corner would loop forever, so it is refused.
      if ((x == r.a0 && y == r.b0) || (x == r.a1 && y == r.b1)) throw LimitReached{};
      todo.push_back({x, r.a1, y, r.b1});
      todo.push_back({r.a0, x, r.b0, y});
    }
    return b_for_a;
  }

 private:
  bool same(std::int64_t i, std::int64_t j) const { return eq_(static_cast<std::size_t>(i), static_cast<std::size_t>(j)); }
  std::int64_t& fwd(std::int64_t k) { return forward_[static_cast<std::size_t>(offset_ + k)]; }
  std::int64_t& rev(std::int64_t k) { return reverse_[static_cast<std::size_t>(offset_ + k)]; }

  void count_steps(std::int64_t n) {
    steps_ += static_cast<std::uint64_t>(n);
    if (steps_ > max_steps_) throw LimitReached{};
  }

  // A point (absolute x, y) on an optimal edit path through r, or nullopt when the range has no element in
  // common. forward(k) holds the furthest x reached from
  // the top-left corner on diagonal k = x - y, reverse(k) the furthest distance reached from the
  // bottom-right corner on diagonal k of the reversed problem; -1 marks a diagonal not reached yet.
  std::optional<std::pair<std::int64_t, std::int64_t>> split_point(const Range& r) {
    const std::int64_t n = r.a1 - r.a0;
    const std::int64_t m = r.b1 - r.b0;
    const std::int64_t total_d = (n + m + 1) / 2;
    const std::int64_t reach = std::min(total_d, d_cap_) + 1;  // diagonals this search can touch
    std::fill(forward_.begin() + (offset_ - reach), forward_.begin() + (offset_ + reach + 1), -1);
    std::fill(reverse_.begin() + (offset_ - reach), reverse_.begin() + (offset_ + reach + 1), -1);
    fwd(1) = 0;
    rev(1) = 0;
    const std::int64_t delta = n - m;
    const bool front = (delta % 2) != 0;  // odd delta: the paths meet during a forward step
    std::int64_t k1_start = 0, k1_end = 0, k2_start = 0, k2_end = 0;
    for (std::int64_t d = 0; d < total_d; ++d) {
      if (d > d_cap_) throw LimitReached{};
      for (std::int64_t k1 = -d + k1_start; k1 <= d - k1_end; k1 += 2) {
        std::int64_t x1 = (k1 == -d || (k1 != d && fwd(k1 - 1) < fwd(k1 + 1))) ? fwd(k1 + 1) : fwd(k1 - 1) + 1;
        std::int64_t y1 = x1 - k1;
        const std::int64_t snake_start = x1;
        while (x1 < n && y1 < m && same(r.a0 + x1, r.b0 + y1)) {
          ++x1;
          ++y1;
        }
        count_steps(1 + x1 - snake_start);
        fwd(k1) = x1;
        if (x1 > n) {
          k1_end += 2;  // ran off the right edge of the edit graph
        } else if (y1 > m) {
          k1_start += 2;  // ran off the bottom edge
        } else if (front) {
          const std::int64_t k2 = delta - k1;
          if (k2 >= -reach && k2 <= reach && rev(k2) != -1 && x1 >= n - rev(k2)) {
            return std::pair{r.a0 + x1, r.b0 + y1};
          }
        }
      }
      for (std::int64_t k2 = -d + k2_start; k2 <= d - k2_end; k2 += 2) {
        std::int64_t x2 = (k2 == -d || (k2 != d && rev(k2 - 1) < rev(k2 + 1))) ? rev(k2 + 1) : rev(k2 - 1) + 1;
        std::int64_t y2 = x2 - k2;
        const std::int64_t snake_start = x2;
        while (x2 < n && y2 < m && same(r.a1 - 1 - x2, r.b1 - 1 - y2)) {
          ++x2;
          ++y2;
        }
        count_steps(1 + x2 - snake_start);
        rev(k2) = x2;
        if (x2 > n) {
          k2_end += 2;
        } else if (y2 > m) {
          k2_start += 2;
        } else if (!front) {
          const std::int64_t k1 = delta - k2;
          if (k1 >= -reach && k1 <= reach && fwd(k1) != -1 && fwd(k1) >= n - x2) {
            return std::pair{r.a0 + fwd(k1), r.b0 + fwd(k1) - k1};
          }
        }
      }
    }
    // The searches did not meet within (N+M+1)/2 steps each: the edit distance is N+M or N+M-1, so the
    // longest common subsequence is empty.
    return std::nullopt;
  }

  std::size_t a_size_, b_size_;
  Eq eq_;
  std::uint64_t max_steps_;
  std::uint64_t steps_ = 0;
  std::int64_t d_cap_ = 0;
  std::int64_t offset_ = 0;
  std::vector<std::int64_t> forward_, reverse_;
};

// A lower bound of the edit distance (insertions plus deletions) between a and b: every element beyond the
// multiset intersection has to be inserted or deleted. It lets hopeless pairs give up in O(N log N) instead
// of searching the edit graph up to the limit.
std::size_t edit_distance_lower_bound(std::span<const std::uint32_t> a, std::span<const std::uint32_t> b) {
  std::vector<std::uint32_t> x(a.begin(), a.end()), y(b.begin(), b.end());
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  std::size_t common = 0;
  for (std::size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    if (x[i] < y[j]) {
      ++i;
    } else if (y[j] < x[i]) {
      ++j;
    } else {
      ++common;
      ++i;
      ++j;
    }
  }
  return x.size() + y.size() - 2 * common;
}

template <typename Eq>
std::optional<std::vector<std::uint32_t>> align(std::size_t n, std::size_t m, Eq eq, const AlignmentLimits& limits) {
  try {
    return MyersAligner<Eq>(n, m, std::move(eq), limits).run();
  } catch (const LimitReached&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<std::vector<std::uint32_t>> align_longest_common_subsequence(std::span<const std::uint32_t> a,
                                                                           std::span<const std::uint32_t> b,
                                                                           const AlignmentLimits& limits) {
  std::size_t prefix = 0, suffix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix]) {
    ++suffix;
  }
  if (edit_distance_lower_bound(a.subspan(prefix, a.size() - prefix - suffix),
                                b.subspan(prefix, b.size() - prefix - suffix)) > limits.max_edit_distance) {
    return std::nullopt;
  }
  return align(a.size(), b.size(), [&](std::size_t i, std::size_t j) { return a[i] == b[j]; }, limits);
}

std::optional<std::vector<std::uint32_t>> align_longest_common_subsequence(std::size_t n, std::size_t m,
                                                                           const ElementsEqual& eq,
                                                                           const AlignmentLimits& limits,
                                                                           AlignmentPreference prefer) {
  if (prefer == AlignmentPreference::kCommonSuffix) return align(n, m, std::cref(eq), limits);
  // The same search on both sequences reversed: what it matches first is the common prefix.
  auto reversed = align(n, m, [&](std::size_t i, std::size_t j) { return eq(n - 1 - i, m - 1 - j); }, limits);
  if (!reversed) return std::nullopt;
  std::vector<std::uint32_t> b_for_a(n, kUnmatched);
  for (std::size_t i = 0; i < n; ++i)
    if ((*reversed)[i] != kUnmatched) b_for_a[n - 1 - i] = static_cast<std::uint32_t>(m - 1 - (*reversed)[i]);
  // Where an element equals several (a library launch equals every library call), the search may pair it
  // late. Move each pair, in order, to the earliest element of b after the previous pair that it equals,
  // then to the earliest element of a that equals that one: the same length, the earliest alignment.
  std::size_t a_free = 0, b_free = 0;  // the first positions after the previous pair
  for (std::size_t i = 0; i < n; ++i) {
    if (b_for_a[i] == kUnmatched) continue;
    std::size_t j = b_free;
    while (!eq(i, j)) ++j;  // ends at b_for_a[i] at the latest
    std::size_t first = a_free;
    while (!eq(first, j)) ++first;  // ends at i at the latest
    b_for_a[i] = kUnmatched;
    b_for_a[first] = static_cast<std::uint32_t>(j);
    a_free = first + 1;
    b_free = j + 1;
    i = first;
  }
  return b_for_a;
}

std::vector<std::pair<std::size_t, std::size_t>> align_in_order(std::size_t n, std::size_t m, const ElementsEqual& eq,
                                                                 std::uint64_t max_steps, Anomalies* anomalies) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (n == 0 || m == 0) return out;
  AlignmentLimits limits;
  limits.max_steps = max_steps;
  if (auto b_for_a = align_longest_common_subsequence(n, m, eq, limits, AlignmentPreference::kCommonPrefix)) {
    for (std::size_t i = 0; i < n; ++i)
      if ((*b_for_a)[i] != kUnmatched) out.emplace_back(i, (*b_for_a)[i]);
    return out;
  }
  if (anomalies)
    anomalies->record(AnomalyKind::kAlignGreedyFallback,
                      fmt::format("{} against {} elements: past the exact alignment's limit of {} steps", n, m, max_steps));
  // Match each element of a, in order, with the next equal element of b.
  std::size_t j = 0;
  for (std::size_t i = 0; i < n && j < m; ++i) {
    std::size_t next = j;
    while (next < m && !eq(i, next)) ++next;
    if (next < m) {
      out.emplace_back(i, next);
      j = next + 1;
    }
  }
  return out;
}

std::vector<std::uint32_t> pair_occurrences(std::span<const std::uint32_t> a, std::span<const std::uint32_t> b) {
  std::size_t symbols = 0;
  for (std::uint32_t v : a) symbols = std::max<std::size_t>(symbols, std::size_t{v} + 1);
  for (std::uint32_t v : b) symbols = std::max<std::size_t>(symbols, std::size_t{v} + 1);
  std::vector<std::vector<std::uint32_t>> positions_in_b(symbols);
  for (std::size_t j = 0; j < b.size(); ++j) positions_in_b[b[j]].push_back(static_cast<std::uint32_t>(j));
  std::vector<std::size_t> used(symbols, 0);
  std::vector<std::uint32_t> b_for_a(a.size(), kUnmatched);
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::size_t& u = used[a[i]];
    if (u < positions_in_b[a[i]].size()) b_for_a[i] = positions_in_b[a[i]][u++];
  }
  return b_for_a;
}

}  // namespace opprof
