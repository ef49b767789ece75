#pragma once
// What attribution concluded for each GPU activity of a Timeline: one row per activity, parallel to
// Timeline::kernels. Every activity ends attributed (with the path and a confidence) or unattributed
// (with a reason); none is dropped.
#include <array>
#include <cstdint>
#include <vector>

#include "opprof/timeline/string_table.hpp"
#include "opprof/util/enum_names.hpp"

namespace opprof {

// Which evidence named the operator.
enum class AttributionPath : std::uint8_t {
  kNone = 0,         // unattributed: see reason
  kCorrelation = 1,  // kernel -> launch (correlation id) -> innermost operator on the launching thread
  kEnclosure = 2,    // kernel inside a range projected onto its stream
  kFusion = 3,       // Inductor provenance: kernel -> fused ATen ops / FX nodes
};
// The names of the enumerations here are the profile database's spelling too (docs/schema.md).
inline constexpr std::array<const char*, 4> kAttributionPathNames = {"none", "correlation", "enclosure", "fusion"};
static_assert(kAttributionPathNames.size() == static_cast<std::size_t>(AttributionPath::kFusion) + 1);
inline const char* to_string(AttributionPath p) { return enum_name(kAttributionPathNames, p); }

// AttributionTable::confidence of each kind of evidence, 0..1.
namespace confidence {
inline constexpr float kOperatorAroundLaunch = 1.0f;    // correlation: an operator range around the launch
inline constexpr float kAnnotationAroundLaunch = 0.9f;  // correlation: only a program's own NVTX range
inline constexpr float kRangeOnStream = 0.8f;           // enclosure: an operator or annotation range on the stream
inline constexpr float kCompiledRegionOnStream = 0.3f;  // enclosure: only the compiled region on the stream
inline constexpr float kGeneratedKernelCall = 1.0f;     // fusion: a generated kernel aligned with its wrapper call
inline constexpr float kLibraryKernelCall = 0.9f;       // fusion: a library kernel aligned with an extern call
// Below this a placement says where a kernel ran but not what it was: fusion replaces its operator.
inline constexpr float kVague = 0.5f;
}  // namespace confidence

// Where the module path came from.
enum class ModuleSource : std::uint8_t {
  kNone = 0,
  kThreadRange = 1,     // a module range enclosing the launch on the launching thread
  kStreamRange = 2,     // a module range projected onto the kernel's stream
  kFxProvenance = 3,    // Inductor provenance -> pre-grad FX nodes -> nn_module_stack
  kForwardOp = 4,       // a backward kernel: the module of the forward operator it differentiates
  kOptimizerStep = 5,   // an optimizer kernel: the optimizer step is its owner ("optimizer: AdamW")
};
inline constexpr std::array<const char*, 6> kModuleSourceNames = {"none",          "thread_range", "stream_range",
                                                                  "fx_provenance", "forward_op",   "optimizer_step"};
static_assert(kModuleSourceNames.size() == static_cast<std::size_t>(ModuleSource::kOptimizerStep) + 1);
inline const char* to_string(ModuleSource s) { return enum_name(kModuleSourceNames, s); }

// Which part of a training step a kernel belongs to.
enum class Phase : std::uint8_t {
  kForward = 0,    // any other kernel with an operator or a module (every kernel of an inference capture)
  kBackward = 1,   // launched inside a backward node on autograd's thread (a compiled backward graph too)
  kOptimizer = 2,  // inside the optimizer step (Optimizer.step#<Class>.step) or by a _foreach_ / fused op
  kOther = 3,      // no operator, module or optimizer step around its launch
  // Collective communication between ranks: an NCCL kernel, or work launched inside a c10d / NCCL / gloo
  // collective's range (gloo's device copies). Takes precedence over the others: DDP's all-reduce runs
  // inside backward.
  kCommunication = 4,
};
inline constexpr int kPhases = 5;
inline constexpr std::array<const char*, kPhases> kPhaseNames = {"forward", "backward", "optimizer", "other",
                                                                 "communication"};
static_assert(kPhaseNames.size() == static_cast<std::size_t>(Phase::kCommunication) + 1);
inline const char* to_string(Phase p) { return enum_name(kPhaseNames, p); }

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
