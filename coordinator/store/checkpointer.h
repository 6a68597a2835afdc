// Copies the write-ahead log back into results.db on a thread of its own, so the loop
// that serves agents never does it (docs/performance.md, Checkpoints off the loop).
//
// SQLite's automatic checkpoint runs inside the commit that crosses 1,000 log pages: the
// loop stops for the read of every logged page and the write and fsync of the database
// file. Here the writer's commits only count the log's pages (a WAL hook, which replaces
// the automatic checkpoint); past kCheckpointPages the thread, on its own connection,
// runs a PASSIVE checkpoint, which never blocks the writer or a reader. Durability is
// unchanged: a commit is durable in the log before it is acknowledged, whoever copies it
// later. A passive checkpoint copies what was logged when it began, and the log starts
// over only once all of it is copied; should a writer that never pauses outrun the
// thread (a log past kCheckpointPagesHardLimit), the writer runs a FULL checkpoint in
// its own commit, so the log stays bounded.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"

namespace benchfleet {

// Log pages (4 KB) past which a checkpoint is due. SQLite's default is 1,000; at a
// fleet's write rate, 4,000 measured best (docs/performance.md, "Checkpoints off the loop").
inline constexpr int kCheckpointPages = 4000;
// Log pages past which the writer checkpoints itself (about 80 MB).
inline constexpr int kCheckpointPagesHardLimit = 20000;

class WalCheckpointer {
 public:
  // Hooks `writer` (a connection to `path` in WAL mode) and starts the thread; the
  // thread's own connection is opened on it. `writer` must outlive this object.
  static StatusOr<std::unique_ptr<WalCheckpointer>> Start(const std::string& path, sqlite3* writer);
  // Unhooks the writer, then stops and joins the thread.
  ~WalCheckpointer();
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

  // Checkpoints the thread has run, and those the writer had to run itself.
  int64_t checkpoints() const { return checkpoints_.load(); }
  int64_t writer_checkpoints() const { return writer_checkpoints_.load(); }

 private:
  WalCheckpointer(std::string path, sqlite3* writer) : path_(std::move(path)), writer_(writer) {}
  static int OnCommit(void* self, sqlite3* db, const char* schema, int log_pages);
  void Run();

  const std::string path_;
  sqlite3* const writer_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::mutex checkpointing_;  // held through each checkpoint, the thread's or the writer's
  bool due_ = false;
  bool stop_ = false;
  std::atomic<int64_t> checkpoints_{0};
  std::atomic<int64_t> writer_checkpoints_{0};
  std::thread thread_;
};

}  // namespace benchfleet
