#pragma once
// Reader for torch.profiler (Kineto) Chrome-trace JSON, plain or gzip-compressed, streamed: the file is
// read in chunks and each event is parsed on its own, so traces of several GB fit in little memory.
#include <cstdint>
#include <functional>
#include <string>

#include "opprof/timeline/timeline.hpp"

namespace opprof {

struct KinetoReadStats {
  std::uint64_t bytes = 0;   // bytes of JSON read (uncompressed)
  std::uint64_t events = 0;  // trace events seen
};

// Called now and then while reading with the bytes read so far (uncompressed) and the file's size
// (compressed size for .gz, so only a rough fraction there).
using ReadProgress = std::function<void(std::uint64_t bytes_read, std::uint64_t file_bytes)>;

// Appends the trace's events to a new Timeline:
//   kernel / gpu_memcpy / gpu_memset          -> kernels
//   cuda_runtime / cuda_driver                -> launches
//   cpu_op                                    -> thread ranges, kind kOperator ("Torch-Compiled Region: .."
//                                                 kCompiledRegion)
//   user_annotation "nn.Module: <path>"       -> thread ranges, kind kModule, text = <path>
//   user_annotation "## Call CompiledFxGraph" -> kCompiledRegion; other user_annotation -> kAnnotation
//   gpu_user_annotation                       -> stream ranges (same kinds as above), device/stream set
//   python_function and the rest              -> kOther (or ignored when they carry nothing)
// Metadata: "source"="kineto", "device.<i>.name", "device.<i>.num_sms", "base_time_ns", "trace.*".
// Throws InputError with line/column on malformed or truncated JSON, and on a missing file.
Timeline read_kineto_trace(const std::string& path, KinetoReadStats* stats = nullptr,
                           const ReadProgress& progress = {});

}  // namespace opprof
