#pragma once
// Alignment of two sequences by a longest common subsequence (Myers' O((N+M)D) difference algorithm,
// linear-space variant): the one aligner of the engine. It pairs ncu rows with timeline kernels where the
// two kernel sequences diverge, the launches of a compiled region with the wrapper's calls of its graph,
// and the kernels of two profiles being compared.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "opprof/anomaly/anomalies.hpp"

namespace opprof {

struct AlignmentLimits {
  // Give up when the two sequences differ by more than this many insertions and deletions: the cost grows
  // with (N+M)·D and such a pair is not a recording of one run with a few differences anyway.
  std::size_t max_edit_distance = 100000;
  // Give up after this many steps along the edit graph (diagonal visits plus matched elements): about two
  // seconds. Long periodic sequences (a model's layers) with many scattered differences cost the most.
  std::uint64_t max_steps = 500'000'000;
};

// For each position of a, the position of b it is matched to (0xffffffff when none). Matched pairs have
// equal symbols, increase in both sequences and form a longest common subsequence. Where several longest
// subsequences exist, the common suffix of the two sequences is matched first, so elements that only one
// side recorded at its start (compilation, warm-up) are the ones left over. nullopt when a limit is reached.
std::optional<std::vector<std::uint32_t>> align_longest_common_subsequence(std::span<const std::uint32_t> a,
                                                                           std::span<const std::uint32_t> b,
                                                                           const AlignmentLimits& limits = {});

// Whether element i of the first sequence equals element j of the second.
using ElementsEqual = std::function<bool(std::size_t i, std::size_t j)>;

// Which longest common subsequence to prefer where several exist.
enum class AlignmentPreference : std::uint8_t {
  kCommonSuffix,  // match the common suffix first: leftovers are at the start (warm-up one side recorded)
  kCommonPrefix,  // match the common prefix first, and move each pair to the earliest positions it can
                  // take after the pair before it: an element that equals several takes the first
};

// The same for two sequences of lengths n and m whose elements eq compares (any relation: an element
// may equal several others).
std::optional<std::vector<std::uint32_t>> align_longest_common_subsequence(std::size_t n, std::size_t m,
                                                                           const ElementsEqual& eq,
                                                                           const AlignmentLimits& limits,
                                                                           AlignmentPreference prefer);

// The matched pairs (i, j) in increasing order (kCommonPrefix), a longest common subsequence. Past max_steps the
// exact search gives up and each element of the first sequence is matched, in order, with the next equal
// element of the second; that fallback is recorded in anomalies (kind align.greedy_fallback) with the sizes.
inline constexpr std::uint64_t kAlignInOrderMaxSteps = 16u << 20;  // well under a second
std::vector<std::pair<std::size_t, std::size_t>> align_in_order(std::size_t n, std::size_t m, const ElementsEqual& eq,
                                                                 std::uint64_t max_steps = kAlignInOrderMaxSteps,
                                                                 Anomalies* anomalies = nullptr);

// For sequences too far apart to align: pairs the k-th occurrence of each symbol in a with its k-th
// occurrence in b. Exact within a symbol, but it does not check the order across symbols (pairs may
// cross). Same result shape as align_longest_common_subsequence.
std::vector<std::uint32_t> pair_occurrences(std::span<const std::uint32_t> a, std::span<const std::uint32_t> b);

}  // namespace opprof
