// The bracket scan and newline count compiled for AVX2 and carry-less multiply: two 32-byte compares per
// character class instead of four 16-byte ones, and the quote prefix-XOR in one instruction. Used when
// the CPU has both (json_scan.cpp checks at start-up); elsewhere these functions are never called.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "opprof/ingest/json_scan.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,pclmul,popcnt,bmi")
#include <immintrin.h>

#include "opprof/ingest/json_scan_kernel.hpp"

namespace opprof::detail {
namespace {

struct Avx2 {
  static std::uint64_t eq_bits(__m256i v, __m256i c) {
    return static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, c)));
  }
  static BlockMasks classify(const char* p, char open_char) {
    const __m256i quote = _mm256_set1_epi8('"');
    const __m256i backslash = _mm256_set1_epi8('\\');
    const __m256i open = _mm256_set1_epi8(open_char);
    const __m256i close = _mm256_set1_epi8(static_cast<char>(open_char + 2));  // '{' -> '}', '[' -> ']'
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    BlockMasks m;
    m.quote = eq_bits(lo, quote) | eq_bits(hi, quote) << 32;
    m.backslash = eq_bits(lo, backslash) | eq_bits(hi, backslash) << 32;
    m.open = eq_bits(lo, open) | eq_bits(hi, open) << 32;
    m.close = eq_bits(lo, close) | eq_bits(hi, close) << 32;
    return m;
  }
  static std::uint64_t prefix_xor(std::uint64_t x) {
    // Carry-less multiplication by all ones is the running XOR of the bits.
    const __m128i product =
        _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<long long>(x)), _mm_set1_epi8(-1), 0);
    return static_cast<std::uint64_t>(_mm_cvtsi128_si64(product));
  }
};

}  // namespace

std::size_t scan_to_value_end_avx2(const char* data, std::size_t size, BracketScan& scan) {
  return scan_blocks<Avx2>(data, size, scan);
}

std::uint64_t count_newlines_avx2(const char* p, std::size_t n) {
  std::uint64_t total = 0;
  std::size_t i = 0;
  const __m256i newline = _mm256_set1_epi8('\n');
  const __m256i zero = _mm256_setzero_si256();
  while (n - i >= 32) {
    // Byte counters subtract the compare result (-1 per match) and would overflow after 255 blocks.
    const std::size_t blocks = std::min<std::size_t>((n - i) / 32, 255);
    __m256i counts = zero;
    for (std::size_t b = 0; b < blocks; ++b, i += 32) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
      counts = _mm256_sub_epi8(counts, _mm256_cmpeq_epi8(v, newline));
    }
    const __m256i sums = _mm256_sad_epu8(counts, zero);  // four 64-bit partial sums
    total += static_cast<std::uint64_t>(_mm256_extract_epi64(sums, 0) + _mm256_extract_epi64(sums, 1) +
                                        _mm256_extract_epi64(sums, 2) + _mm256_extract_epi64(sums, 3));
  }
  for (; i < n; ++i) total += p[i] == '\n';
  return total;
}

}  // namespace opprof::detail

#pragma GCC pop_options
#else
namespace opprof::detail {
// Not an x86-64 GCC/Clang build: json_scan.cpp never picks these; they exist so the names resolve.
std::size_t scan_to_value_end_avx2(const char* data, std::size_t size, BracketScan& scan) {
  return scan_to_value_end_baseline(data, size, scan);
}
std::uint64_t count_newlines_avx2(const char* p, std::size_t n) { return count_newlines_baseline(p, n); }
}  // namespace opprof::detail
#endif
