#include "opprof/attribute/kernel_family.hpp"

#include "opprof/match/ncu_match.hpp"

namespace opprof {

std::string kernel_family(std::string_view kernel_name) {
  std::string base = kernel_base_name(kernel_name);
  auto us = base.find_last_of('_');
  if (us != std::string::npos && us + 1 < base.size() &&
      base.find_first_not_of("0123456789", us + 1) == std::string::npos)
    base.resize(us);
  return base;
}

}  // namespace opprof
