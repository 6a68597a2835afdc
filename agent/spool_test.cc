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
  {
    SpoolDirectory spool(dir_.string());
    ASSERT_TRUE(spool.Open().ok());
    ASSERT_TRUE(spool.Put({1, 1, {{"ok", true}}}).ok());
  }
  std::ofstream(dir_ / "job-9-1.result.json") << "{truncated";
  std::ofstream(dir_ / "job-8-1.result.json.tmp-4242") << "{\"job_id\": 8";  // an interrupted Put
  SpoolDirectory reopened(dir_.string());
  ASSERT_TRUE(reopened.Open().ok());
  ASSERT_EQ(reopened.List().size(), 1u);
  EXPECT_EQ(reopened.List()[0].job_id, 1);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "job-9-1.result.json.bad"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "job-8-1.result.json.tmp-4242"));
  SpoolDirectory again(dir_.string());
  ASSERT_TRUE(again.Open().ok());
  EXPECT_EQ(again.List().size(), 1u);
}

// The directory is read once, at Open(); listing (every resend) never touches the disk,
// and Put/Remove keep memory and disk in step.
TEST_F(SpoolTest, ListIsServedFromMemoryAfterOpen) {
  SpoolDirectory spool(dir_.string());
  ASSERT_TRUE(spool.Open().ok());
  ASSERT_TRUE(spool.Put({7, 1, {{"ok", true}, {"median", 2.5}}}).ok());
  ASSERT_TRUE(spool.Put({5, 2, {{"ok", true}}}).ok());
  ASSERT_TRUE(spool.Put({7, 1, {{"ok", true}, {"median", 3.5}}}).ok());  // replaces, no duplicate
  // A file that appears behind the spool's back, and one that vanishes, are not seen
  // until the next Open(): List() does not re-read the directory.
  std::ofstream(dir_ / "job-99-1.result.json") << R"({"job_id": 99, "attempt": 1, "result": {}})";
  std::filesystem::remove(dir_ / "job-5-2.result.json");
  ASSERT_EQ(spool.size(), 2u);
  EXPECT_EQ(spool.List()[0].job_id, 5);
  EXPECT_EQ(spool.List()[1].job_id, 7);
  EXPECT_DOUBLE_EQ(spool.List()[1].result["median"].get<double>(), 3.5);

  ASSERT_TRUE(spool.Remove(5, 2).ok());  // its file is already gone: fine
  ASSERT_TRUE(spool.Remove(7, 1).ok());
  EXPECT_EQ(spool.size(), 0u);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "job-7-1.result.json"));

  SpoolDirectory reopened(dir_.string());  // what is on disk is what a restart sees
  ASSERT_TRUE(reopened.Open().ok());
  ASSERT_EQ(reopened.size(), 1u);
  EXPECT_EQ(reopened.List()[0].job_id, 99);
}

TEST_F(SpoolTest, AResultThatCannotBeWrittenIsStillListed) {
  SpoolDirectory spool(dir_.string());
  ASSERT_TRUE(spool.Open().ok());
  std::filesystem::remove_all(dir_);  // the disk went away under the agent
  EXPECT_FALSE(spool.Put({4, 1, {{"ok", true}}}).ok());
  ASSERT_EQ(spool.size(), 1u);  // still resent while the agent lives
  EXPECT_EQ(spool.List()[0].job_id, 4);
  EXPECT_TRUE(spool.Remove(4, 1).ok());
  EXPECT_EQ(spool.size(), 0u);
}

TEST_F(SpoolTest, UnwritableDirectoryIsAnError) {
  SpoolDirectory spool("/proc/benchfleet-no-such-dir/spool");
  EXPECT_FALSE(spool.Open().ok());
}

}  // namespace
}  // namespace benchfleet
