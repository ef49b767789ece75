#pragma once
#include <string_view>

namespace opprof {
// Bytes of a file compiled into the library (data/, the report assets; by base name); empty when there is
// none.
std::string_view embedded_file(std::string_view name);
}  // namespace opprof
