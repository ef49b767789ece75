#include "opprof/util/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace opprof {
namespace {
std::string format_input_error(const std::string& file, const std::string& message, const InputPosition& pos) {
  if (!pos.known) return printable(fmt::format("{}: {}", file, message));
  if (pos.line == 0) return printable(fmt::format("{}: byte {}: {}", file, pos.byte_offset, message));
  return printable(fmt::format("{}:{}:{}: {}", file, pos.line, pos.column, message));
}

// Length of the valid UTF-8 sequence at s[i] (1 to 4), or 0 when the bytes there are not one.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  std::size_t n;
  std::uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1Fu;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0Fu;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07u;
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3Fu);
  }
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not valid UTF-8.
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}
}  // namespace

InputError::InputError(std::string file, std::string message, InputPosition pos)
    : std::runtime_error(format_input_error(file, message, pos)),
      file_(std::move(file)),
      message_(std::move(message)),
      pos_(pos) {}

std::string fmt_errno(const std::string& what) { return fmt::format("{}: {}", what, std::strerror(errno)); }

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n' || c == '\t' || c == '\r') {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
      ++i;
    } else if (const std::size_t n = c >= 0x80 ? utf8_sequence_length(text, i) : 0; n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    }
  }
  return out;
}

}  // namespace opprof
