// The bracket scan and newline count compiled for AVX2 and carry-less multiply: two 32-byte compares per
// character class instead of four 16-byte ones, and the quote prefix-XOR in one instruction. Used when
// the CPU has both (json_scan.cpp checks at start-up); elsewhere these functions are never called.
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
  using Vec = __m256i;
  static constexpr int kWidth = 32;
  static Vec load(const char* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static Vec splat(char c) { return _mm256_set1_epi8(c); }
  static Vec zero() { return _mm256_setzero_si256(); }
  static std::uint64_t eq_bits(Vec v, Vec c) {
    return static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, c)));
  }
  static Vec sub_matches(Vec counts, Vec v, Vec c) { return _mm256_sub_epi8(counts, _mm256_cmpeq_epi8(v, c)); }
  static std::uint64_t byte_sum(Vec counts) {
    const __m256i sums = _mm256_sad_epu8(counts, zero());  // four 64-bit partial sums
    return static_cast<std::uint64_t>(_mm256_extract_epi64(sums, 0) + _mm256_extract_epi64(sums, 1) +
                                      _mm256_extract_epi64(sums, 2) + _mm256_extract_epi64(sums, 3));
  }
  static BlockMasks classify(const char* p, char open_char) { return classify_by_compares<Avx2>(p, open_char); }
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

std::uint64_t count_newlines_avx2(const char* p, std::size_t n) { return count_newlines_by_compares<Avx2>(p, n); }

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
