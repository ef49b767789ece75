#pragma once
// Checks that the inputs given with a timeline belong to it, before attribution trusts them: an Inductor
// debug directory from another model would attribute the kernels to that model's modules, and a compiled
// trace without one loses its fused operators and module paths without a word.
#include <string>
#include <vector>

#include "opprof/ingest/inductor.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

// Warnings about an Inductor directory (path) whose generated kernels do not all occur in the timeline:
// one line per graph none of whose kernels ran in the capture (a warm-up recompile, another model's graph).
// Throws InputError when the directory has generated kernels and none of them occurs: it belongs to
// another model or run.
std::vector<std::string> check_inductor_matches_timeline(const Timeline& tl, const InductorArtifacts& inductor,
                                                         const std::string& path);

// A warning when the timeline is of a compiled model (Triton kernels, compiled-graph ranges) and no
// Inductor directory was given; empty otherwise.
std::string compiled_without_inductor_warning(const Timeline& tl);

}  // namespace opprof
