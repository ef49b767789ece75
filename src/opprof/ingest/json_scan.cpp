#include "opprof/ingest/json_scan.hpp"

#include <algorithm>

#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#define OPPROF_SCAN_SSE2 1
#endif

namespace opprof::detail {
namespace {

// The bytes of one 64-byte block that matter to the scan, one bit per byte (bit i = byte i).
struct BlockMasks {
  std::uint64_t quote = 0;
  std::uint64_t backslash = 0;
  std::uint64_t open = 0;   // '{' or '['
  std::uint64_t close = 0;  // '}' or ']'
};

#ifdef OPPROF_SCAN_SSE2
inline std::uint64_t eq_bits(__m128i v, __m128i c) {
  return static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, c)));
}

inline BlockMasks classify(const char* p) {
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i case_bit = _mm_set1_epi8(0x20);
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  BlockMasks m;
  for (int i = 0; i < 4; ++i) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    // '[' | 0x20 == '{' and ']' | 0x20 == '}', and no other byte folds onto either: one compare finds both.
    __m128i folded = _mm_or_si128(v, case_bit);
    const int shift = 16 * i;
    m.quote |= eq_bits(v, quote) << shift;
    m.backslash |= eq_bits(v, backslash) << shift;
    m.open |= eq_bits(folded, open) << shift;
    m.close |= eq_bits(folded, close) << shift;
  }
  return m;
}
#else
inline BlockMasks classify(const char* p) {
  BlockMasks m;
  for (int i = 0; i < 64; ++i) {
    const std::uint64_t bit = std::uint64_t{1} << i;
    switch (p[i]) {
      case '"': m.quote |= bit; break;
      case '\\': m.backslash |= bit; break;
      case '{': case '[': m.open |= bit; break;
      case '}': case ']': m.close |= bit; break;
      default: break;
    }
  }
  return m;
}
#endif

// Bit i set when any of bits 0..i of x is set an odd number of times: turns quote positions into
// "inside a string" (the opening quote counts as inside, the closing one as outside).
inline std::uint64_t prefix_xor(std::uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

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

}  // namespace

std::size_t scan_to_value_end(const char* data, std::size_t size, BracketScan& scan) {
  while (scan.pos < size) {
    const std::size_t valid = size - scan.pos;
    const BlockMasks m = classify(data + scan.pos);
    const std::uint64_t valid_bits = valid >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << valid) - 1;

    std::uint64_t escape_carry = scan.escape_carry;
    const std::uint64_t escaped = (m.backslash | escape_carry) ? escaped_bytes(m.backslash, escape_carry) : 0;
    const std::uint64_t in_string = prefix_xor(m.quote & ~escaped) ^ scan.in_string;
    std::uint64_t brackets = (m.open | m.close) & ~in_string & valid_bits;

    std::int64_t depth = scan.depth;
    while (brackets != 0) {
      const int i = __builtin_ctzll(brackets);
      brackets &= brackets - 1;
      if ((m.open >> i) & 1) {
        ++depth;
      } else if (--depth == 0) {
        return scan.pos + static_cast<std::size_t>(i) + 1;
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

std::uint64_t count_newlines(const char* p, std::size_t n) {
  std::uint64_t total = 0;
  std::size_t i = 0;
#ifdef OPPROF_SCAN_SSE2
  const __m128i newline = _mm_set1_epi8('\n');
  const __m128i zero = _mm_setzero_si128();
  while (n - i >= 16) {
    // Byte counters subtract the compare result (-1 per match) and would overflow after 255 blocks.
    const std::size_t blocks = std::min<std::size_t>((n - i) / 16, 255);
    __m128i counts = zero;
    for (std::size_t b = 0; b < blocks; ++b, i += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      counts = _mm_sub_epi8(counts, _mm_cmpeq_epi8(v, newline));
    }
    const __m128i sums = _mm_sad_epu8(counts, zero);
    total += static_cast<std::uint64_t>(_mm_cvtsi128_si64(sums)) +
             static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
#endif
  for (; i < n; ++i) total += p[i] == '\n';
  return total;
}

}  // namespace opprof::detail
