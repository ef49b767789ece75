// What traces say of collectives (ingest/communication_args.hpp): the tracer's communication and
// process-group marks, torch.profiler's Input Dims / Input type and distributedInfo. The first byte picks
// the parser; the rest is its text. None may throw: a text that is not what it should be gives nothing.
#include <string_view>

#include "fuzz_input.hpp"
#include "opprof/ingest/communication_args.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: (void)opprof::parse_comm_args_mark(text); break;
    case 1: (void)opprof::parse_process_group_mark(text); break;
    case 2: {
      // "Input Dims" and "Input type" arrays, separated by the first newline.
      const std::size_t nl = text.find('\n');
      const opprof::InputTensors t =
          opprof::input_tensors(text.substr(0, nl), nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1));
      if (t.elements < -1 || t.bytes < -1) std::abort();
      break;
    }
    default: (void)opprof::process_groups_of_distributed_info(text); break;
  }
  return 0;
}
