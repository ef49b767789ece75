#pragma once
// What attribution concluded for each GPU activity of a Timeline: one row per activity, parallel to
// Timeline::kernels. Every activity ends attributed (with the path and a confidence) or unattributed
// (with a reason); none is dropped.
#include <cstdint>
#include <vector>

#include "opprof/timeline/string_table.hpp"

namespace opprof {

// Which evidence named the operator.
enum class AttributionPath : std::uint8_t {
  kNone = 0,         // unattributed: see reason
  kCorrelation = 1,  // kernel -> launch (correlation id) -> innermost operator on the launching thread
  kEnclosure = 2,    // kernel inside a range projected onto its stream
  kFusion = 3,       // Inductor provenance: kernel -> fused ATen ops / FX nodes
};
const char* to_string(AttributionPath p);

// Where the module path came from.
enum class ModuleSource : std::uint8_t {
  kNone = 0,
  kThreadRange = 1,     // a module range enclosing the launch on the launching thread
  kStreamRange = 2,     // a module range projected onto the kernel's stream
  kFxProvenance = 3,    // Inductor provenance -> pre-grad FX nodes -> nn_module_stack
  kForwardOp = 4,       // a backward kernel: the module of the forward operator it differentiates
  kOptimizerStep = 5,   // an optimizer kernel: the optimizer step is its owner ("optimizer: AdamW")
};
const char* to_string(ModuleSource s);

// Which part of a training step a kernel belongs to.
enum class Phase : std::uint8_t {
  kForward = 0,    // any other kernel with an operator or a module (every kernel of an inference capture)
  kBackward = 1,   // launched inside a backward node on autograd's thread (a compiled backward graph too)
  kOptimizer = 2,  // inside the optimizer step (Optimizer.step#<Class>.step) or by a _foreach_ / fused op
  kOther = 3,      // no operator, module or optimizer step around its launch
};
inline constexpr int kPhases = 4;
const char* to_string(Phase p);

struct AttributionTable {
  std::vector<AttributionPath> path;
  std::vector<float> confidence;          // 0..1
  std::vector<std::uint32_t> op_range;    // the operator range (index into Timeline::ranges), kNoIndex if none
  std::vector<StrId> op;                  // operator name; for Inductor kernels the kernel's launcher
  std::vector<StrId> top_op;              // outermost operator around the launch (aten::linear over aten::addmm)
  std::vector<StrId> module;              // module path, kNoString when unknown
  std::vector<ModuleSource> module_source;
  std::vector<StrId> fused_ops;           // comma-separated ATen ops an Inductor kernel fuses, else kNoString
  std::vector<StrId> fx_nodes;            // comma-separated pre-grad FX source nodes (fusion path)
  std::vector<StrId> provenance_handle;   // Inductor "kernel:N" handle
  std::vector<StrId> source_line;         // user source line of the FX node, when known
  std::vector<StrId> family;              // kernel family: base kernel name with digits and templates stripped
  std::vector<StrId> reason;              // why unattributed, kNoString when attributed
  std::vector<std::uint8_t> opaque;       // 1 when launched inside an opaque library backend (cuDNN RNN)
  std::vector<StrId> opaque_backend;      // which backend, kNoString otherwise
  std::vector<Phase> phase;
  std::vector<StrId> forward_op;          // backward kernels: the forward operator they differentiate

  std::size_t size() const { return path.size(); }
  void resize(std::size_t n);
};

}  // namespace opprof
