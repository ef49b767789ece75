#pragma once
// Collective communication between ranks as the timeline shows it: NCCL's kernels by name, and the
// ranges of c10d's operators (c10d::allreduce_), of ProcessGroupNCCL / ProcessGroupGloo's work
// ("nccl:all_reduce", "gloo:all_reduce") and torch.profiler's record_param_comms.
#include <string>
#include <string_view>

#include "opprof/timeline/timeline.hpp"  // is_communication_range and the ranges' prefixes

namespace opprof {

// Whether a kernel (any spelling: mangled, demangled) is one of NCCL's device kernels.
bool is_communication_kernel(std::string_view kernel_name);

// The collective a communication range names ("allreduce", "all_reduce", "broadcast"), "" when the range
// is none; record_param_comms gives "record_param_comms" (its collective is in the trace's arguments).
std::string collective_of_range(std::string_view text);

// The collective of an NCCL kernel: "ncclDevKernel_AllReduce_Sum_f32_RING_LL" -> "AllReduce"; "" for others.
std::string collective_of_kernel(std::string_view kernel_name);

}  // namespace opprof
