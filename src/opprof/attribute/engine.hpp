#pragma once
// The attribution engine: combines the three paths into one AttributionTable.
//   1. correlation: kernel -> launch (correlation id) -> innermost operator range enclosing the launch on
//      the launching thread; the innermost module range there gives the module path.
//   2. enclosure:   kernels without a usable launch fall back to ranges on their GPU stream: ranges the
//      source put there (gpu_user_annotation, NVTX projected by a tracer) and module ranges projected onto
//      the stream from the kernels that correlation attributed (per-stream interval indexes).
//   3. fusion:      inside a compiled region, the region's kernels are aligned with the Inductor wrapper's
//      calls; a generated kernel gets its fused ATen ops and FX source nodes, and every kernel of the
//      region (library GEMMs too) gets the module path of its FX nodes.
#include <string>
#include <vector>

#include "opprof/anomaly/anomalies.hpp"
#include "opprof/attribute/attribution.hpp"
#include "opprof/attribute/opaque_backends.hpp"
#include "opprof/ingest/inductor.hpp"
#include "opprof/match/sequence_align.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

struct AttributionOptions {
  OpaqueBackends opaque = OpaqueBackends::builtin();
  // Steps the exact alignment of a compiled region's launches with its graph's calls may take before it
  // falls back to greedy in-order matching (anomaly align.greedy_fallback).
  std::uint64_t fusion_align_max_steps = kAlignInOrderMaxSteps;
};

struct AttributionNotes {
  std::vector<std::string> lines;  // how compiled regions were aligned, what could not be, one line each
  // Per timeline range: 1 when it is an operator range around some kernel's launch (or the operator
  // enclosure picked). Operator ranges that launched nothing (aten::view, aten::empty) are 0.
  std::vector<std::uint8_t> operator_on_launch_path;
  // Choices attribution made on its own (graph ties, alignment fallbacks); ncu matching adds its own.
  Anomalies anomalies;
};

// Attributes every GPU activity of tl. Interns the strings it makes (module paths, fused-op lists,
// reasons) into tl.strings and changes nothing else in tl. inductor may be null.
AttributionTable attribute_timeline(Timeline& tl, const InductorArtifacts* inductor, const AttributionOptions& opt,
                                    AttributionNotes* notes = nullptr);

}  // namespace opprof
