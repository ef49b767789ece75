#include "opprof/attribute/communication.hpp"

#include <array>

#include "opprof/util/text.hpp"

namespace opprof {
namespace {

constexpr std::array<std::string_view, 2> kNcclKernelPrefixes = {"ncclDevKernel_", "ncclKernel_"};
constexpr std::array<std::string_view, 2> kWorkPrefixes = {"nccl:", "gloo:"};  // ProcessGroup work titles
constexpr std::string_view kC10dPrefix = "c10d::";
constexpr std::string_view kParamComms = "record_param_comms";

}  // namespace

bool is_communication_kernel(std::string_view name) {
  for (std::string_view p : kNcclKernelPrefixes)
    if (contains(name, p)) return true;
  return false;
}

bool is_communication_range(std::string_view text) {
  return text == kParamComms || starts_with(text, kC10dPrefix) || starts_with(text, kWorkPrefixes[0]) ||
         starts_with(text, kWorkPrefixes[1]);
}

std::string collective_of_range(std::string_view text) {
  if (text == kParamComms) return std::string(kParamComms);
  for (std::string_view p : kWorkPrefixes)
    if (starts_with(text, p)) return std::string(text.substr(p.size()));
  if (!starts_with(text, kC10dPrefix)) return {};
  // c10d's operators: "c10d::allreduce_", "c10d::_allgather_base_", "c10d::barrier".
  std::string_view op = text.substr(kC10dPrefix.size());
  while (!op.empty() && op.front() == '_') op.remove_prefix(1);
  while (!op.empty() && op.back() == '_') op.remove_suffix(1);
  return std::string(op);
}

std::string collective_of_kernel(std::string_view name) {
  for (std::string_view p : kNcclKernelPrefixes) {
    const auto at = name.find(p);
    if (at == std::string_view::npos) continue;
    std::string_view rest = name.substr(at + p.size());
    return std::string(rest.substr(0, rest.find('_')));
  }
  return {};
}

}  // namespace opprof
