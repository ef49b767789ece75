#pragma once
#include <string>
#include <string_view>

namespace opprof {

// A kernel's family: its base function name (see kernel_base_name) without a trailing "_<digits>"
// instance suffix, so that triton_poi_fused_add_3 and triton_poi_fused_add_7 group together and every
// instantiation of at::native::elementwise_kernel<...> is one family.
std::string kernel_family(std::string_view kernel_name);

}  // namespace opprof
