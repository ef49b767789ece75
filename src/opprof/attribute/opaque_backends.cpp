#include "opprof/attribute/opaque_backends.hpp"

#include <fmt/format.h>

#include "opprof/util/embedded.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {

OpaqueBackends OpaqueBackends::builtin() { return parse(embedded_file("opaque_backends.tsv"), "<built-in>"); }

OpaqueBackends OpaqueBackends::parse(std::string_view text, const std::string& source) {
  OpaqueBackends out;
  std::uint64_t line_no = 0;
  for (std::string_view line : split_lines(text)) {
    ++line_no;
    if (trim(line).empty() || trim(line).front() == '#') continue;
    auto cols = split(line, '\t');
    if (cols.size() != 2 || trim(cols[0]).empty() || trim(cols[1]).empty())
      throw InputError(source, "expected two tab-separated columns: operator, backend", {line_no, 1, 0, true});
    out.by_op_[std::string(trim(cols[0]))] = std::string(trim(cols[1]));
  }
  return out;
}

std::string_view OpaqueBackends::backend_of(std::string_view op) const {
  auto it = by_op_.find(std::string(op));
  return it == by_op_.end() ? std::string_view() : std::string_view(it->second);
}

}  // namespace opprof
