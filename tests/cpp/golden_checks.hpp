#pragma once
// Checks the golden tests on real captures share.
#include <gtest/gtest.h>

#include "opprof/ingest/ncu_csv.hpp"
#include "opprof/match/ncu_match.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof::testing {

// Every ncu row matched exactly one kernel and every kernel one row, each pair with the same grid, block
// and name, checked from the raw data rather than trusted.
inline void expect_ncu_matches_every_kernel(const Timeline& tl, const NcuTable& ncu, const NcuMatch& match) {
  EXPECT_EQ(match.matched, ncu.rows());
  EXPECT_TRUE(match.unmatched_rows.empty());
  EXPECT_TRUE(match.unmatched_kernels.empty());
  for (std::size_t k = 0; k < tl.kernels.size(); ++k) {
    if (tl.kernels.kind[k] != ActivityKind::kKernel) continue;
    const std::uint32_t row = match.ncu_row_for_kernel[k];
    ASSERT_NE(row, kNoIndex) << "kernel " << k;
    EXPECT_EQ(tl.kernels.grid[k], ncu.grid[row]) << "kernel " << k;
    EXPECT_EQ(tl.kernels.block[k], ncu.block[row]) << "kernel " << k;
    EXPECT_EQ(kernel_match_name(tl.str(tl.kernels.name[k])), kernel_match_name(ncu.kernel_name[row])) << "kernel " << k;
  }
}

}  // namespace opprof::testing
