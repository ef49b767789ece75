#pragma once
// Alignment of two sequences of interned symbols by a longest common subsequence (Myers' O((N+M)D)
// difference algorithm, linear-space variant), used to pair ncu rows with timeline kernels where the two
// kernel sequences diverge.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

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

// For sequences too far apart to align: pairs the k-th occurrence of each symbol in a with its k-th
// occurrence in b. Exact within a symbol, but it does not check the order across symbols (pairs may
// cross). Same result shape as align_longest_common_subsequence.
std::vector<std::uint32_t> pair_occurrences(std::span<const std::uint32_t> a, std::span<const std::uint32_t> b);

}  // namespace opprof
