#pragma once
// Comparison of two timelines for the readers' tests (the same input read in different ways).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "opprof/timeline/timeline.hpp"

namespace opprof::test_support {

// Every column of two timelines, strings compared as text (ids depend on interning order only).
inline void expect_same_timeline(const Timeline& a, const Timeline& b) {
  // kNoString (unknown) has no text in the table.
  auto text = [](const Timeline& t, StrId id) { return id == kNoString ? std::string("<none>") : std::string(t.str(id)); };
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (std::size_t i = 0; i < a.kernels.size(); ++i) {
    SCOPED_TRACE("kernel " + std::to_string(i));
    EXPECT_EQ(a.str(a.kernels.name[i]), b.str(b.kernels.name[i]));
    EXPECT_EQ(a.kernels.kind[i], b.kernels.kind[i]);
    EXPECT_EQ(text(a, a.kernels.mangled[i]), text(b, b.kernels.mangled[i]));
    EXPECT_EQ(a.kernels.graph_id[i], b.kernels.graph_id[i]);
    EXPECT_EQ(a.kernels.graph_node[i], b.kernels.graph_node[i]);
    EXPECT_EQ(a.kernels.start_ns[i], b.kernels.start_ns[i]);
    EXPECT_EQ(a.kernels.end_ns[i], b.kernels.end_ns[i]);
    EXPECT_EQ(a.kernels.pid[i], b.kernels.pid[i]);
    EXPECT_EQ(a.kernels.device[i], b.kernels.device[i]);
    EXPECT_EQ(a.kernels.stream[i], b.kernels.stream[i]);
    EXPECT_EQ(a.kernels.grid[i], b.kernels.grid[i]);
    EXPECT_EQ(a.kernels.block[i], b.kernels.block[i]);
    EXPECT_EQ(a.kernels.correlation[i], b.kernels.correlation[i]);
    EXPECT_EQ(a.kernels.external_id[i], b.kernels.external_id[i]);
    EXPECT_EQ(a.kernels.registers_per_thread[i], b.kernels.registers_per_thread[i]);
    EXPECT_EQ(a.kernels.shared_mem_bytes[i], b.kernels.shared_mem_bytes[i]);
    EXPECT_EQ(a.kernels.bytes[i], b.kernels.bytes[i]);
  }
  ASSERT_EQ(a.launches.size(), b.launches.size());
  for (std::size_t i = 0; i < a.launches.size(); ++i) {
    EXPECT_EQ(a.str(a.launches.api[i]), b.str(b.launches.api[i]));
    EXPECT_EQ(a.launches.cpu_start_ns[i], b.launches.cpu_start_ns[i]);
    EXPECT_EQ(a.launches.cpu_end_ns[i], b.launches.cpu_end_ns[i]);
    EXPECT_EQ(a.launches.correlation[i], b.launches.correlation[i]);
    EXPECT_EQ(a.launches.external_id[i], b.launches.external_id[i]);
    EXPECT_EQ(a.launches.tid[i], b.launches.tid[i]);
  }
  ASSERT_EQ(a.ranges.size(), b.ranges.size());
  for (std::size_t i = 0; i < a.ranges.size(); ++i) {
    EXPECT_EQ(a.str(a.ranges.text[i]), b.str(b.ranges.text[i]));
    EXPECT_EQ(a.ranges.kind[i], b.ranges.kind[i]);
    EXPECT_EQ(text(a, a.ranges.domain[i]), text(b, b.ranges.domain[i]));
    EXPECT_EQ(a.ranges.depth[i], b.ranges.depth[i]);
    EXPECT_EQ(a.ranges.scope(i), b.ranges.scope(i));
    EXPECT_EQ(a.ranges.owner(i), b.ranges.owner(i));
    EXPECT_EQ(a.ranges.start_ns[i], b.ranges.start_ns[i]);
    EXPECT_EQ(a.ranges.end_ns[i], b.ranges.end_ns[i]);
    EXPECT_EQ(a.ranges.external_id[i], b.ranges.external_id[i]);
  }
  auto without_path = [](std::map<std::string, std::string> m) {
    m.erase("source.path");
    return m;
  };
  EXPECT_EQ(without_path(a.metadata), without_path(b.metadata));
}

}  // namespace opprof::test_support
