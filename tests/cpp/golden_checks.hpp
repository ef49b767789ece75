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

// Every ncu row matched exactly one kernel of the same name and every kernel one row; a pair whose grid or
// block differ (another launch configuration: a timeline and an ncu CSV from two runs that autotuned apart)
// is flagged as such, and a pair that agrees is not. Returns the number of flagged pairs.
inline std::size_t expect_every_row_matched_once_configs_flagged(const Timeline& tl, const NcuTable& ncu,
                                                                 const NcuMatch& match) {
  EXPECT_EQ(match.matched, ncu.rows());
  EXPECT_TRUE(match.unmatched_rows.empty());
  EXPECT_TRUE(match.unmatched_kernels.empty());
  std::vector<int> kernels_of_row(ncu.rows(), 0);
  std::size_t flagged = 0;
  for (std::size_t k = 0; k < tl.kernels.size(); ++k) {
    if (tl.kernels.kind[k] != ActivityKind::kKernel) continue;
    const std::uint32_t row = match.ncu_row_for_kernel[k];
    if (row == kNoIndex) {
      ADD_FAILURE() << "kernel " << k << " has no ncu row";
      continue;
    }
    ++kernels_of_row[row];
    EXPECT_EQ(match.kernel_for_ncu_row[row], k);
    EXPECT_EQ(kernel_match_name(tl.str(tl.kernels.name[k])), kernel_match_name(ncu.kernel_name[row])) << "kernel " << k;
    const bool differs = tl.kernels.grid[k] != ncu.grid[row] || tl.kernels.block[k] != ncu.block[row];
    EXPECT_EQ(match.launch_config_kernel_for_ncu_row[row], differs ? k : kNoIndex) << "kernel " << k;
    flagged += differs;
  }
  for (std::size_t r = 0; r < ncu.rows(); ++r) EXPECT_EQ(kernels_of_row[r], 1) << "ncu row " << r;
  EXPECT_EQ(match.launch_config_differs, flagged);
  return flagged;
}

}  // namespace opprof::testing
