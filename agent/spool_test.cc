#include "agent/spool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace benchfleet {
namespace {

class SpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("bf-spool-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(SpoolTest, ResultsSurviveAReopenUntilRemoved) {
  {
    SpoolDirectory spool(dir_.string());
    ASSERT_TRUE(spool.Open().ok());
    ASSERT_TRUE(spool.Put({12, 2, {{"ok", true}, {"median", 1.5}}}).ok());
    ASSERT_TRUE(spool.Put({3, 1, {{"ok", false}, {"error", "boom"}}}).ok());
  }
  SpoolDirectory reopened(dir_.string());  // as after an agent restart
  ASSERT_TRUE(reopened.Open().ok());
  auto entries = reopened.List();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].job_id, 3);  // oldest job first
  EXPECT_EQ(entries[1].job_id, 12);
  EXPECT_EQ(entries[1].attempt, 2);
  EXPECT_DOUBLE_EQ(entries[1].result["median"].get<double>(), 1.5);
  ASSERT_TRUE(reopened.Remove(12, 2).ok());
  ASSERT_TRUE(reopened.Remove(12, 2).ok());  // already gone: fine
  EXPECT_EQ(reopened.List().size(), 1u);
}

TEST_F(SpoolTest, CorruptFilesAreMovedAsideNotRetriedForever) {
  SpoolDirectory spool(dir_.string());
  ASSERT_TRUE(spool.Open().ok());
  ASSERT_TRUE(spool.Put({1, 1, {{"ok", true}}}).ok());
  std::ofstream(dir_ / "job-9-1.result.json") << "{truncated";
  auto entries = spool.List();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "job-9-1.result.json.bad"));
  EXPECT_EQ(spool.List().size(), 1u);
}

TEST_F(SpoolTest, UnwritableDirectoryIsAnError) {
  SpoolDirectory spool("/proc/benchfleet-no-such-dir/spool");
  EXPECT_FALSE(spool.Open().ok());
}

}  // namespace
}  // namespace benchfleet
