#include "opprof/util/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace opprof {
namespace {
std::string format_input_error(const std::string& file, const std::string& message, const InputPosition& pos) {
  if (!pos.known) return fmt::format("{}: {}", file, message);
  if (pos.line == 0) return fmt::format("{}: byte {}: {}", file, pos.byte_offset, message);
  return fmt::format("{}:{}:{}: {}", file, pos.line, pos.column, message);
}
}  // namespace

InputError::InputError(std::string file, std::string message, InputPosition pos)
    : std::runtime_error(format_input_error(file, message, pos)),
      file_(std::move(file)),
      message_(std::move(message)),
      pos_(pos) {}

std::string fmt_errno(const std::string& what) { return fmt::format("{}: {}", what, std::strerror(errno)); }

}  // namespace opprof
