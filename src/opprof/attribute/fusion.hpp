#pragma once
// Path 3, fusion: Inductor provenance for kernels of compiled graphs.
#include <functional>
#include <string>
#include <vector>

#include "opprof/attribute/attribution.hpp"
#include "opprof/attribute/engine.hpp"
#include "opprof/attribute/range_indexes.hpp"
#include "opprof/ingest/inductor.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

// For every compiled region on a thread, lines up the region's launches with the wrapper's calls of the
// graph that ran (output_code.py's call() sequence), by name and in order (longest common subsequence),
// and gives each kernel its call's provenance: generated kernels get path kFusion with their fused ATen
// ops and FX nodes; library kernels (extern calls) keep their operator and gain FX nodes; all gain the
// module path their FX nodes map to. launch_of[k] is kernel k's launch row or kNoIndex.
void apply_fusion(Timeline& tl, const InductorArtifacts& inductor, const ThreadRangeIndexes& threads,
                  const std::vector<std::uint32_t>& launch_of, AttributionTable& a, AttributionNotes* notes);

// Longest common subsequence of two sequences of lengths n and m whose elements eq(i, j) compares: pairs
// (i, j) in increasing order, the earliest alignment where several exist. Uses O(n*m) time and memory up
// to max_cells, then falls back to greedy in-order matching.
std::vector<std::pair<std::size_t, std::size_t>> align_in_order(std::size_t n, std::size_t m,
                                                                 const std::function<bool(std::size_t, std::size_t)>& eq,
                                                                 std::size_t max_cells = 16u << 20);

}  // namespace opprof
