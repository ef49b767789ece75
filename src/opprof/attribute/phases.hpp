#pragma once
// The phase of every kernel of a training step (forward, backward, optimizer, other), and for backward
// kernels the forward operator they differentiate and its module, through autograd's sequence number.
#include <cstdint>
#include <vector>

#include "opprof/attribute/attribution.hpp"
#include "opprof/attribute/engine.hpp"
#include "opprof/attribute/range_indexes.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

// By the ranges around each kernel's launch on the launching thread:
//   optimizer  inside an "Optimizer.step#<Class>.step" annotation, or launched by a _foreach_ / fused
//              optimizer operator; the module becomes "optimizer: <Class>" ("optimizer" without the class).
//   backward   inside a backward node's range (one with a sequence number and a forward thread, or the autograd
//              engine's "evaluate_function" range). The node's forward operator is found through
//              tl.autograd_links, else by sequence number on the forward thread; the kernel gets its name as
//              forward_op and, unless FX provenance named one, its module.
//   forward    any other kernel with an operator or a module; other: the rest.
// launch_of[k] is kernel k's launch row or kNoIndex.
void assign_phases(Timeline& tl, const ThreadRangeIndexes& threads, const std::vector<std::uint32_t>& launch_of,
                   AttributionTable& a, AttributionNotes* notes);

// "Optimizer.step#AdamW.step" -> "AdamW"; empty when text is no optimizer step annotation.
std::string_view optimizer_class(std::string_view text);

// Whether an operator is one of torch's multi-tensor (_foreach_) or fused optimizer kernels' operators.
bool is_optimizer_operator(std::string_view op);

}  // namespace opprof
