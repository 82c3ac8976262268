#include "core/file_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "test_util.h"

namespace biaslab {
namespace {
namespace fs = std::filesystem;

TEST(FileLock, SecondLockerIsRefusedAndSeesTheHolder) {
  test::TempDir tmp;
  FileLock first(tmp / ".lock");
  ASSERT_TRUE(first.held());
  FileLock second(tmp / ".lock");  // another open file description: flock refuses it
  EXPECT_FALSE(second.held());
  EXPECT_EQ(second.holder_pid(), static_cast<long>(::getpid()));
}

TEST(FileLock, HolderRemovesTheFileOnRelease) {
  test::TempDir tmp;
  {
    FileLock lock(tmp / ".lock");
    ASSERT_TRUE(lock.held());
    EXPECT_TRUE(fs::exists(tmp / ".lock"));
    FileLock refused(tmp / ".lock");
    ASSERT_FALSE(refused.held());
  }  // `refused` must not remove the holder's file; `lock` removes it
  EXPECT_FALSE(fs::exists(tmp / ".lock"));
  FileLock again(tmp / ".lock");
  EXPECT_TRUE(again.held());
}

TEST(FileLock, RefusedLockerLeavesTheHolderFile) {
  test::TempDir tmp;
  FileLock holder(tmp / ".lock");
  ASSERT_TRUE(holder.held());
  { FileLock refused(tmp / ".lock"); }
  EXPECT_TRUE(fs::exists(tmp / ".lock"));
  FileLock still(tmp / ".lock");
  EXPECT_FALSE(still.held());
}

TEST(FileLock, StaleFileOfAKilledHolderIsTakenOver) {
  test::TempDir tmp;
  std::ofstream(tmp / ".lock") << "999999\n";  // what a killed holder leaves
  FileLock lock(tmp / ".lock");
  EXPECT_TRUE(lock.held());
}

}  // namespace
}  // namespace biaslab
