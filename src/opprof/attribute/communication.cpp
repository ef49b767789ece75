#include "opprof/attribute/communication.hpp"

#include <array>

#include "opprof/util/text.hpp"

namespace opprof {
namespace {

constexpr std::array<std::string_view, 2> kNcclKernelPrefixes = {"ncclDevKernel_", "ncclKernel_"};

}  // namespace

bool is_communication_kernel(std::string_view name) {
  for (std::string_view p : kNcclKernelPrefixes)
    if (contains(name, p)) return true;
  return false;
}

std::string collective_of_range(std::string_view text) {
  if (text == kParamCommsRange) return std::string(kParamCommsRange);
  for (std::string_view p : kProcessGroupWorkPrefixes)
    if (starts_with(text, p)) return std::string(text.substr(p.size()));
  if (!starts_with(text, kC10dOperatorPrefix)) return {};
  // c10d's operators: "c10d::allreduce_", "c10d::_allgather_base_", "c10d::barrier".
  std::string_view op = text.substr(kC10dOperatorPrefix.size());
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
