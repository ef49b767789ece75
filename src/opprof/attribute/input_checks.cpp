#include "opprof/attribute/input_checks.hpp"

#include <fmt/format.h>

#include <unordered_set>

#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

// The names of the timeline's kernels (kind kernel), as printed.
std::unordered_set<std::string_view> kernel_names(const Timeline& tl) {
  std::unordered_set<std::string_view> names;
  std::unordered_set<StrId> seen;
  for (std::size_t i = 0; i < tl.kernels.size(); ++i)
    if (tl.kernels.kind[i] == ActivityKind::kKernel && seen.insert(tl.kernels.name[i]).second)
      names.insert(tl.str(tl.kernels.name[i]));
  return names;
}

}  // namespace

std::vector<std::string> check_inductor_matches_timeline(const Timeline& tl, const InductorArtifacts& inductor,
                                                         const std::string& path) {
  const auto names = kernel_names(tl);
  std::size_t generated = 0, occurring = 0;
  std::vector<std::string> warnings;
  std::vector<std::string> silent_graphs;
  for (const InductorGraph& g : inductor.graphs) {
    std::unordered_set<std::string_view> callees;
    // GPU kernels only: a CPU compile's C++ kernels (cpp_fused_*) launch nothing a trace records.
    for (const WrapperCall& c : g.calls)
      if (c.kind == WrapperCall::Kind::kTriton && !starts_with(c.callee, "cpp_")) callees.insert(c.callee);
    std::size_t here = 0;
    for (std::string_view c : callees) here += names.count(c);
    generated += callees.size();
    occurring += here;
    if (!callees.empty() && here == 0) silent_graphs.push_back(g.dir);
  }
  if (generated == 0) return warnings;  // graphs of library calls only (or a CPU compile): nothing to compare
  if (occurring == 0)
    throw InputError(path, fmt::format("none of the {} kernels Inductor generated in this directory occurs in the "
                                       "trace: it belongs to another model or run (pass the directory the "
                                       "captured run wrote, or leave --inductor out)",
                                       generated));
  for (const std::string& dir : silent_graphs)
    warnings.push_back(fmt::format("Inductor graph {} ran in none of the trace's kernels (compiled for another "
                                   "model, or only during warm-up): its provenance is not used",
                                   dir));
  return warnings;
}

std::string compiled_without_inductor_warning(const Timeline& tl) {
  std::size_t triton = 0;
  for (std::size_t i = 0; i < tl.kernels.size(); ++i)
    if (tl.kernels.kind[i] == ActivityKind::kKernel && starts_with(tl.str(tl.kernels.name[i]), "triton_")) ++triton;
  std::size_t graph_calls = 0;
  for (std::size_t i = 0; i < tl.ranges.size(); ++i)
    if (tl.ranges.kind[i] == RangeKind::kCompiledRegion) ++graph_calls;
  if (triton == 0 && graph_calls == 0) return {};
  return fmt::format(
      "the trace is of a compiled model ({} Triton kernels, {} compiled-graph ranges) but no --inductor directory "
      "was given: generated kernels get no fused operators and modules come only from module ranges around the "
      "compiled call. Capture with TORCH_COMPILE_DEBUG=1 (its torch_compile_debug/run_*/torchinductor directory) "
      "or with `opprof profile --compile inductor`, and pass that directory with --inductor",
      triton, graph_calls);
}

}  // namespace opprof
