#pragma once
// Reader for the opprof tracer's binary log (libopprof_tracer.so, format in agents/tracer_log/format.hpp and
// docs/tracer.md).
#include <string>
#include <string_view>

#include "opprof/timeline/timeline.hpp"

namespace opprof {

// Reads a tracer log into a Timeline:
//   kernel / memcpy / memset records -> kernels (mangled name in `mangled`, demangled in `name`)
//   runtime and driver API records   -> launches
//   NVTX push/pop                    -> thread ranges, paired per thread and domain, depth = open ranges on
//                                       the thread when pushed
//   NVTX start/end                   -> thread ranges of the starting thread, depth -1 (they do not nest)
//   cudaProfilerStart/Stop           -> kCaptureWindow thread ranges, metadata window.*
//   graph-launched activity          -> for each range on the NVTX stack active when its graph node was
//                                       captured (through clones back to the original node), a stream range
//                                       covering exactly that activity, so enclosure attributes it
// Range kinds follow classify_nvtx_range. Metadata: "source"="opprof-tracer", "device.<i>.name",
// "device.<i>.num_sms", "device.<i>.cc", clock pairs, window times, counts and "warning.*".
// A log cut inside a record (a crash) is read up to its last complete record with "warning.truncated".
// Throws InputError (with byte offset) on a missing file, bad magic, a newer major version and corrupt
// records.
Timeline read_tracer_log(const std::string& path);

// What an NVTX range text means to attribution, and the text to keep:
//   "nn.Module: <path>"                         -> kModule, "<path>"
//   "## Call CompiledFxGraph ..."               -> kCompiledRegion, unchanged
//   torch.autograd.profiler.emit_nvtx ranges:
//     "<op>, seq = N, op_id = M, sizes = [...], input_op_ids = [...]" (each suffix optional)
//                                               -> kOperator, "<op>"
//   "<ns>::<name>" without spaces (aten::mm)    -> kOperator, unchanged
//   anything else                               -> kAnnotation, unchanged
// "Torch-Compiled Region: <id>" is a compiled region in every domain and category. Other ranges of the
// torch observer's domain (kTorchObserverDomain) are operators by their category instead,
// whatever their text (autograd's "autograd::engine::evaluate_function: MmBackward0" has spaces), except
// the user-scope category, whose texts follow the rules above minus the "<ns>::<name>" one (a
// record_function range is an annotation to torch.profiler too). category < 0: unknown (graph-node stacks
// record none), the text rules apply.
RangeKind classify_nvtx_range(std::string_view text, std::string_view domain, std::int64_t category,
                              std::string_view* kept);
inline RangeKind classify_nvtx_range(std::string_view text, std::string_view* kept) {
  return classify_nvtx_range(text, {}, -1, kept);
}

}  // namespace opprof
