#pragma once
// Byte scanning for streamed JSON: finding where an object or array ends without parsing it, so a
// large array can be cut into its elements and each element handed to simdjson on its own. The scan
// knows strings and escapes (a '}' inside a kernel name or an escaped quote does not end anything) and
// works 64 bytes at a time with SSE2 where available. Like simdjson's first stage, it lets a backslash escape
// the next byte wherever it stands; outside a string a backslash is not JSON, and the parser says so.
#include <cstddef>
#include <cstdint>

namespace opprof::detail {

// Where a bracket scan stands; carried across refills of the input window, so a value that straddles
// chunks is scanned once.
struct BracketScan {
  std::size_t pos = 0;              // next byte to look at; starts at the value's '{' or '['
  std::int64_t depth = 0;           // open brackets not yet closed
  std::uint64_t in_string = 0;      // all ones while the scan is inside a string
  std::uint64_t escape_carry = 0;   // 1 when the previous block ended with an escaping backslash
};

inline constexpr std::size_t kNoEnd = ~std::size_t{0};

// Scans data[scan.pos, size) and returns the index just past the bracket that closes the value the
// scan started on, or kNoEnd when the value continues past size; scan is then ready to resume once more
// bytes follow (it stops at the start of the last partial 64-byte block). Reads up to 63 bytes past
// size, so the buffer must have that much padding. Does not check that bracket kinds match ('{' with
// '}'): the parser that reads the value does.
std::size_t scan_to_value_end(const char* data, std::size_t size, BracketScan& scan);

// Number of '\n' bytes in [p, p + n).
std::uint64_t count_newlines(const char* p, std::size_t n);

}  // namespace opprof::detail
