#include "opprof/ingest/json_scan.hpp"

#include <algorithm>

#include "opprof/ingest/json_scan_kernel.hpp"

#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#define OPPROF_SCAN_SSE2 1
#endif

namespace opprof::detail {
namespace {

#ifdef OPPROF_SCAN_SSE2
// Every x86-64 CPU has SSE2: four 16-byte compares per character class.
struct Sse2 {
  using Vec = __m128i;
  static constexpr int kWidth = 16;
  static Vec load(const char* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static Vec splat(char c) { return _mm_set1_epi8(c); }
  static Vec zero() { return _mm_setzero_si128(); }
  static std::uint64_t eq_bits(Vec v, Vec c) {
    return static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, c)));
  }
  static Vec sub_matches(Vec counts, Vec v, Vec c) { return _mm_sub_epi8(counts, _mm_cmpeq_epi8(v, c)); }
  static std::uint64_t byte_sum(Vec counts) {
    const __m128i sums = _mm_sad_epu8(counts, zero());  // two 64-bit partial sums
    return static_cast<std::uint64_t>(_mm_cvtsi128_si64(sums)) +
           static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
  static BlockMasks classify(const char* p, char open_char) { return classify_by_compares<Sse2>(p, open_char); }
  static std::uint64_t prefix_xor(std::uint64_t x) { return prefix_xor_by_shifts(x); }
};
using Baseline = Sse2;
#else
// Other machines: the same masks a byte at a time.
struct Portable {
  static BlockMasks classify(const char* p, char open_char) {
    const char close_char = static_cast<char>(open_char + 2);
    BlockMasks m;
    for (int i = 0; i < 64; ++i) {
      const std::uint64_t bit = std::uint64_t{1} << i;
      const char c = p[i];
      if (c == '"') m.quote |= bit;
      else if (c == '\\') m.backslash |= bit;
      else if (c == open_char) m.open |= bit;
      else if (c == close_char) m.close |= bit;
    }
    return m;
  }
  static std::uint64_t prefix_xor(std::uint64_t x) { return prefix_xor_by_shifts(x); }
};
using Baseline = Portable;
#endif

using ScanFn = std::size_t (*)(const char*, std::size_t, BracketScan&);
using CountFn = std::uint64_t (*)(const char*, std::size_t);

struct Kernels {
  ScanFn scan;
  CountFn count;
};

Kernels pick_kernels() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();  // may run before the constructors that would otherwise call it
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul"))
    return {scan_to_value_end_avx2, count_newlines_avx2};
#endif
  return {scan_to_value_end_baseline, count_newlines_baseline};
}

// Chosen on first use rather than at static initialization, so that a reader called from another
// static initializer cannot find it unset.
const Kernels& kernels() {
  static const Kernels chosen = pick_kernels();
  return chosen;
}

}  // namespace

std::size_t scan_to_value_end_baseline(const char* data, std::size_t size, BracketScan& scan) {
  return scan_blocks<Baseline>(data, size, scan);
}

std::uint64_t count_newlines_baseline(const char* p, std::size_t n) {
#ifdef OPPROF_SCAN_SSE2
  return count_newlines_by_compares<Sse2>(p, n);
#else
  return static_cast<std::uint64_t>(std::count(p, p + n, '\n'));
#endif
}

bool scan_uses_avx2() { return kernels().scan != scan_to_value_end_baseline; }

std::size_t scan_to_value_end(const char* data, std::size_t size, BracketScan& scan) {
  return kernels().scan(data, size, scan);
}

std::uint64_t count_newlines(const char* p, std::size_t n) { return kernels().count(p, n); }

}  // namespace opprof::detail
