#pragma once
// Byte scanning for streamed JSON: finding where an object or array ends without parsing it, so a
// large array can be cut into its elements and each element handed to simdjson on its own. The scan
// knows strings and escapes (a '}' inside a kernel name or an escaped quote does not end anything) and
// works 64 bytes at a time, with SSE2, or AVX2 where the CPU has it. Like simdjson's first stage, it
// lets a backslash escape the next byte wherever it stands; outside a string a backslash is not JSON,
// and the parser says so.
#include <cstddef>
#include <cstdint>

namespace opprof::detail {

// Where a bracket scan stands; carried across refills of the input window, so a value that straddles
// chunks is scanned once.
struct BracketScan {
  std::size_t pos = 0;              // next byte to look at; starts at the value's '{' or '['
  char open = 0;                    // the value's kind of bracket, taken from its first byte
  std::int64_t depth = 0;           // brackets of that kind not yet closed
  std::uint64_t in_string = 0;      // all ones while the scan is inside a string
  std::uint64_t escape_carry = 0;   // 1 when the previous block ended with an escaping backslash
};

inline constexpr std::size_t kNoEnd = ~std::size_t{0};

// Scans data[scan.pos, size) and returns the index just past the bracket that closes the value the
// scan started on, or kNoEnd when the value continues past size; scan is then ready to resume once more
// bytes follow (it stops at the start of the last partial 64-byte block). Reads up to 63 bytes past
// size, so the buffer must have that much padding.
// Only brackets of the value's own kind are counted: in valid JSON '{' and '}' balance by themselves, so
// an event's end is found counting its two or three braces, and blocks of argument arrays need no
// bracket-by-bracket walk. That brackets of both kinds nest properly is for the parser to check.
std::size_t scan_to_value_end(const char* data, std::size_t size, BracketScan& scan);

// Number of '\n' bytes in [p, p + n).
std::uint64_t count_newlines(const char* p, std::size_t n);

// The two builds the functions above choose between at start-up, for tests that check both: the
// baseline (SSE2 on any x86-64, byte-wise elsewhere) and AVX2 (only to be called when
// scan_uses_avx2()).
std::size_t scan_to_value_end_baseline(const char* data, std::size_t size, BracketScan& scan);
std::size_t scan_to_value_end_avx2(const char* data, std::size_t size, BracketScan& scan);
std::uint64_t count_newlines_baseline(const char* p, std::size_t n);
std::uint64_t count_newlines_avx2(const char* p, std::size_t n);
bool scan_uses_avx2();

}  // namespace opprof::detail
