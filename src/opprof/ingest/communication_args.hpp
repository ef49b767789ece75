#pragma once
// A collective's arguments as the traces give them: the NVTX marks of a tracer log (contract:
// OPPROF_COMM_ARGS_MARK, OPPROF_PROCESS_GROUP_MARK: JSON after a prefix; the torch observer writes the
// first inside gloo:* / nccl:* / record_param_comms ranges, the capture the second at the window's start),
// torch.profiler's "Input Dims" / "Input type" and distributedInfo, and the sizes of torch's dtypes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opprof {

inline constexpr std::string_view kCommArgsMarkPrefix = "opprof.comm ";
inline constexpr std::string_view kProcessGroupMarkPrefix = "opprof.process_group ";

struct CommArgsMark {
  std::int64_t elements = -1, bytes = -1, group_size = -1;
  std::string dtype, process_group, process_group_desc, collective;
};

// One entry of torch.profiler's distributedInfo.pg_config, the process-group mark's JSON too:
// {"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 2, "ranks": [0, 1]}.
struct ProcessGroupMark {
  std::string name, desc, backend, ranks;  // ranks: "0,1"
  std::int64_t size = -1;
};

// The mark's content, or nullopt when the text does not start with the prefix or its JSON is not an
// object of the expected fields (unknown fields are ignored; a field of the wrong type is left unset).
std::optional<CommArgsMark> parse_comm_args_mark(std::string_view text);
std::optional<ProcessGroupMark> parse_process_group_mark(std::string_view text);
// One pg_config entry (JSON text); nullopt without a "pg_name".
std::optional<ProcessGroupMark> parse_process_group(std::string_view json);

// Bytes of one element of a dtype as torch names it: c10's names ("Float", "BFloat16", record_param_comms's
// dtype) and the C++ names of torch.profiler's "Input type" ("float", "c10::BFloat16", "long int");
// 0 for a name that is not a tensor dtype ("Scalar", "TensorList", "").
int element_bytes(std::string_view dtype);

// The tensors among an operator's inputs, from torch.profiler's "Input Dims" and "Input type" (raw JSON
// arrays of one entry per input). A tensor input (its type a dtype) adds the product of its dims; a
// TensorList adds each tensor's product, with no dtype. elements -1 when the arrays hold no tensor.
struct InputTensors {
  std::int64_t elements = -1;
  std::int64_t bytes = -1;  // -1 unless every tensor's dtype is known
  std::string dtype;        // the tensors' dtype; "mixed" when they differ; "" when unknown
};
InputTensors input_tensors(std::string_view input_dims_json, std::string_view input_types_json);

// The process groups of torch.profiler's top-level "distributedInfo" (its "pg_config"); [] when it has none.
std::vector<ProcessGroupMark> process_groups_of_distributed_info(std::string_view json);

}  // namespace opprof
