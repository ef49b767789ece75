// The Timeline's range table: rows hold a track index, and the track's fields read back as each row's.
#include <gtest/gtest.h>

#include "opprof/timeline/timeline.hpp"

namespace opprof {
namespace {

TEST(RangeTable, RowsOfOneThreadOrStreamShareATrackAndReadBackItsFields) {
  RangeTable r;
  r.add(RangeKind::kOperator, RangeScope::kThread, 1, kNoString, 10, 77, 0, 100);
  r.add(RangeKind::kOperator, RangeScope::kStream, 2, kNoString, 10, 7, 0, 100, 3);  // stream 7 of device 3
  r.add(RangeKind::kModule, RangeScope::kThread, 3, kNoString, 10, 78, 0, 100);      // another thread
  r.add(RangeKind::kOperator, RangeScope::kThread, 4, kNoString, 10, 77, 10, 90);    // back on the first
  r.add(RangeKind::kOperator, RangeScope::kStream, 5, kNoString, 10, 7, 0, 100, 4);  // stream 7 of device 4
  r.add(RangeKind::kOperator, RangeScope::kThread, 6, kNoString, 11, 77, 0, 100);    // tid 77 of process 11
  r.add(RangeKind::kOperator, RangeScope::kStream, 7, kNoString, 10, 77, 0, 100);    // stream 77, not thread 77

  ASSERT_EQ(r.tracks().size(), 6u);
  EXPECT_EQ(r.track[0], r.track[3]);
  for (std::size_t i : {1u, 2u, 4u, 5u, 6u}) EXPECT_NE(r.track[i], r.track[0]) << i;
  EXPECT_NE(r.track[1], r.track[4]);

  EXPECT_EQ(r.scope(1), RangeScope::kStream);
  EXPECT_EQ(r.pid(1), 10u);
  EXPECT_EQ(r.owner(1), 7u);
  EXPECT_EQ(r.device(1), 3u);
  EXPECT_EQ(r.device(4), 4u);
  EXPECT_EQ(r.owner(2), 78u);
  EXPECT_EQ(r.pid(5), 11u);
  EXPECT_EQ(r.scope(6), RangeScope::kStream);
  EXPECT_EQ(r.owner(6), 77u);
}

TEST(RangeTable, SetPidMovesOneRowToItsTrackInTheOtherProcess) {
  RangeTable r;
  r.add(RangeKind::kAnnotation, RangeScope::kStream, 1, kNoString, 0, 7, 0, 100, 1);
  r.add(RangeKind::kAnnotation, RangeScope::kStream, 2, kNoString, 0, 7, 0, 100, 1);
  r.add(RangeKind::kOperator, RangeScope::kStream, 3, kNoString, 42, 7, 0, 100, 1);
  r.set_pid(0, 42);
  EXPECT_EQ(r.pid(0), 42u);
  EXPECT_EQ(r.owner(0), 7u);
  EXPECT_EQ(r.device(0), 1u);
  EXPECT_EQ(r.scope(0), RangeScope::kStream);
  EXPECT_EQ(r.track[0], r.track[2]) << "the track that already existed, not a copy";
  EXPECT_EQ(r.pid(1), 0u) << "the other row of the old track stays";
  EXPECT_EQ(r.tracks().size(), 2u);
}

}  // namespace
}  // namespace opprof
