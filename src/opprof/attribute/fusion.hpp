#pragma once
// Path 3, fusion: Inductor provenance for kernels of compiled graphs.
#include <string>
#include <vector>

#include "opprof/attribute/attribution.hpp"
#include "opprof/attribute/engine.hpp"
#include "opprof/attribute/range_indexes.hpp"
#include "opprof/ingest/inductor.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

// For every compiled region on a thread, lines up the region's launches with the wrapper's calls of the
// graph that ran (output_code.py's call() sequence), by name and in order (align_in_order),
// and gives each kernel its call's provenance: generated kernels get path kFusion with their fused ATen
// ops and FX nodes; library kernels (extern calls) keep their operator and gain FX nodes; all gain the
// module path their FX nodes map to. launch_of[k] is kernel k's launch row or kNoIndex.
void apply_fusion(Timeline& tl, const InductorArtifacts& inductor, const ThreadRangeIndexes& threads,
                  const std::vector<std::uint32_t>& launch_of, const AttributionOptions& opt, AttributionTable& a,
                  AttributionNotes* notes);

}  // namespace opprof
