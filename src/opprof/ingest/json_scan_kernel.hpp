#pragma once
// The bracket scan's loop, block classification and newline count, shared by the builds of json_scan.cpp
// (any x86-64, or portable C++) and json_scan_avx2.cpp (compiled for AVX2 and carry-less multiply, picked
// at run time when the CPU has them): each instruction set gives only its intrinsics. Only those two files
// include this header, and everything in it has internal linkage: the two instruction sets' copies must
// never be merged by the linker.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "opprof/ingest/json_scan.hpp"

namespace opprof::detail {
namespace {

// The bytes of one 64-byte block that matter to the scan, one bit per byte (bit i = byte i).
struct BlockMasks {
  std::uint64_t quote = 0;
  std::uint64_t backslash = 0;
  std::uint64_t open = 0;   // the value's opening bracket ('{' or '[')
  std::uint64_t close = 0;  // its closing one
};

// Bytes escaped by a backslash. A backslash that is itself escaped escapes nothing; carry says whether
// the first byte is escaped by the previous block and is updated for the next. Backslashes are rare in
// traces (escaped quotes in an argument, a Windows path), so a loop over them costs nothing in practice.
inline std::uint64_t escaped_bytes(std::uint64_t backslash, std::uint64_t& carry) {
  std::uint64_t escaped = carry;
  carry = 0;
  while (backslash != 0) {
    const int i = __builtin_ctzll(backslash);
    backslash &= backslash - 1;
    const std::uint64_t bit = std::uint64_t{1} << i;
    if (escaped & bit) continue;
    if (i == 63)
      carry = 1;
    else
      escaped |= bit << 1;
  }
  return escaped;
}

// The running XOR of the bits (bit i = XOR of bits 0..i) by shifts, for ISAs without carry-less multiply.
inline std::uint64_t prefix_xor_by_shifts(std::uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// The masks of one block by vector compares. Isa provides Vec, kWidth (bytes per Vec, dividing 64),
// load(p), splat(c) and eq_bits(v, c): bit j set when byte j of v equals that of c.
template <class Isa>
BlockMasks classify_by_compares(const char* p, char open_char) {
  const auto quote = Isa::splat('"');
  const auto backslash = Isa::splat('\\');
  const auto open = Isa::splat(open_char);
  const auto close = Isa::splat(static_cast<char>(open_char + 2));  // '{' -> '}', '[' -> ']'
  BlockMasks m;
  for (int i = 0; i < 64 / Isa::kWidth; ++i) {
    const auto v = Isa::load(p + Isa::kWidth * i);
    const int shift = Isa::kWidth * i;
    m.quote |= Isa::eq_bits(v, quote) << shift;
    m.backslash |= Isa::eq_bits(v, backslash) << shift;
    m.open |= Isa::eq_bits(v, open) << shift;
    m.close |= Isa::eq_bits(v, close) << shift;
  }
  return m;
}

// Newlines in p[0, n) by vector compares, the tail a byte at a time. Isa provides, besides the above,
// zero(), sub_matches(counts, v, c) (each byte of counts minus one where v's byte equals c's) and
// byte_sum(counts): the sum of counts' bytes.
template <class Isa>
std::uint64_t count_newlines_by_compares(const char* p, std::size_t n) {
  constexpr std::size_t width = Isa::kWidth;
  std::uint64_t total = 0;
  std::size_t i = 0;
  const auto newline = Isa::splat('\n');
  while (n - i >= width) {
    // Byte counters subtract the compare result (-1 per match) and would overflow after 255 blocks.
    const std::size_t blocks = std::min<std::size_t>((n - i) / width, 255);
    auto counts = Isa::zero();
    for (std::size_t b = 0; b < blocks; ++b, i += width) counts = Isa::sub_matches(counts, Isa::load(p + i), newline);
    total += Isa::byte_sum(counts);
  }
  for (; i < n; ++i) total += p[i] == '\n';
  return total;
}

// Isa provides classify(const char* block, char open) -> BlockMasks and prefix_xor(mask): bit i set
// when bits 0..i of mask hold an odd count, which turns quote positions into "inside a string" (the
// opening quote counts as inside, the closing one as outside).
template <class Isa>
std::size_t scan_blocks(const char* data, std::size_t size, BracketScan& scan) {
  if (scan.open == 0 && scan.pos < size) scan.open = data[scan.pos];
  while (scan.pos < size) {
    const std::size_t valid = size - scan.pos;
    const BlockMasks m = Isa::classify(data + scan.pos, scan.open);
    const std::uint64_t valid_bits = valid >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << valid) - 1;

    std::uint64_t escape_carry = scan.escape_carry;
    const std::uint64_t escaped = (m.backslash | escape_carry) ? escaped_bytes(m.backslash, escape_carry) : 0;
    const std::uint64_t in_string = Isa::prefix_xor(m.quote & ~escaped) ^ scan.in_string;
    const std::uint64_t opens = m.open & ~in_string & valid_bits;
    const std::uint64_t closes = m.close & ~in_string & valid_bits;

    std::int64_t depth = scan.depth;
    // Only a closing bracket can end the value. Most blocks of an event hold none of its kind (an event
    // has two or three braces; its argument lists use brackets), and then the open ones only count.
    if (closes == 0) {
      for (std::uint64_t o = opens; o != 0; o &= o - 1) ++depth;
    } else {
      std::uint64_t brackets = opens | closes;
      while (brackets != 0) {
        const int i = __builtin_ctzll(brackets);
        brackets &= brackets - 1;
        if ((opens >> i) & 1) {
          ++depth;
        } else if (--depth == 0) {
          return scan.pos + static_cast<std::size_t>(i) + 1;
        }
      }
    }
    // A partial block is not committed: the bytes past size are padding, and the block is scanned again
    // whole once the window holds more.
    if (valid < 64) return kNoEnd;
    scan.depth = depth;
    scan.in_string = static_cast<std::uint64_t>(static_cast<std::int64_t>(in_string) >> 63);
    scan.escape_carry = escape_carry;
    scan.pos += 64;
  }
  return kNoEnd;
}

}  // namespace
}  // namespace opprof::detail
