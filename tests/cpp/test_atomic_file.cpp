#include "opprof/util/atomic_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "opprof/util/error.hpp"
#include "profile_fixture.hpp"

namespace opprof {
namespace {

using testing::slurp;
using testing::TempDir;

TEST(AtomicFile, CommitPublishesTheWholeFileAndLeavesNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("out.txt");
  {
    AtomicFile out(path);
    out.write("first ");
    EXPECT_EQ(dir.entries(), (std::vector<std::string>{"out.txt.tmp-" + std::to_string(::getpid())}));
    out.write("second");
    out.commit();
    EXPECT_THROW(out.write("after"), OutputError);
  }
  EXPECT_EQ(slurp(path), "first second");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"out.txt"}));
}

TEST(AtomicFile, StartWritebackChangesNothingAndIsHarmlessWithoutATemporary) {
  TempDir dir;
  const std::string path = dir.file("out.txt");
  {
    AtomicFile out(path);
    out.start_writeback();  // nothing written yet: no temporary exists, and none is created
    EXPECT_TRUE(dir.entries().empty());
    out.write(std::string(1 << 20, 'x'));
    out.start_writeback();  // queues what reached the temporary; the bytes and their order stay
    out.write("end");
    out.start_writeback();
    out.commit();
  }
  EXPECT_EQ(slurp(path), std::string(1 << 20, 'x') + "end");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"out.txt"}));
}

TEST(AtomicFile, WithoutCommitTheOldFileStays) {
  TempDir dir;
  const std::string path = dir.file("out.txt");
  write_file_atomically(path, "old");
  {
    AtomicFile out(path);
    out.write("new, unfinished");
    out.start_writeback();
  }
  EXPECT_EQ(slurp(path), "old");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"out.txt"}));
}

}  // namespace
}  // namespace opprof
