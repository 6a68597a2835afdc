// The log is copied back into the database by the checkpointer's thread, not by the
// writer's commits, and stays bounded however fast the writer writes; everything
// committed is in the database after a checkpoint, read by a fresh connection.
#include "coordinator/store/checkpointer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "sqlite/sqlite.h"

namespace benchfleet {
namespace {

class CheckpointerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("checkpointer-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "log.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  uintmax_t LogBytes() const {
    std::error_code error;
    const uintmax_t size = std::filesystem::file_size(path_ + "-wal", error);
    return error ? 0 : size;
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(CheckpointerTest, TheThreadCheckpointsAndTheLogStaysBounded) {
  auto writer = Database::Open(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  Database& db = **writer;
  // Durability does not matter here, only the log's pages: no fsync, so the test is fast.
  ASSERT_TRUE(db.Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; "
                      "CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB)")
                  .ok());
  sqlite3_busy_timeout(db.handle(), 500);  // as the store's writer
  auto checkpointer = WalCheckpointer::Start(path_, db.handle());
  ASSERT_TRUE(checkpointer.ok()) << checkpointer.status().message();
  const WalCheckpointer& c = **checkpointer;

  // Each commit logs about three 4 KB pages: 6,000 commits are over four times
  // kCheckpointPages.
  constexpr int kCommits = 6000;
  uintmax_t largest_log = 0;
  for (int i = 0; i < kCommits; ++i) {
    const Status inserted = db.Exec("INSERT INTO t(payload) VALUES (randomblob(8000))");
    ASSERT_TRUE(inserted.ok()) << inserted.message();
    if (i % 100 == 0) largest_log = std::max(largest_log, LogBytes());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (c.checkpoints() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the checkpointer's own thread
  }
  EXPECT_GE(c.checkpoints(), 1) << "the thread ran no checkpoint";
  // However far this writer, which never pauses, outruns the thread, the log never
  // grows beyond the hard limit by more than one commit's pages (a frame is a page and a
  // 24-byte header; the log's own header is 32 bytes).
  EXPECT_LE(largest_log, static_cast<uintmax_t>(kCheckpointPagesHardLimit + 16) * (4096 + 24) + 32);

  // Stopped, the writer is unhooked: its commits go on, and a last checkpoint of its
  // own leaves every row in the database file.
  checkpointer->reset();
  ASSERT_TRUE(db.Exec("INSERT INTO t(payload) VALUES (zeroblob(10))").ok());
  ASSERT_TRUE(db.Exec("PRAGMA wal_checkpoint(TRUNCATE)").ok());
  EXPECT_EQ(LogBytes(), 0u);
  auto reader = Database::Open(path_, SQLITE_OPEN_READONLY);
  ASSERT_TRUE(reader.ok());
  auto count = (*reader)->Prepare("SELECT count(*) FROM t");
  ASSERT_TRUE(count.ok());
  auto row = count->Step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ(count->Int(0), kCommits + 1);
}

}  // namespace
}  // namespace benchfleet
