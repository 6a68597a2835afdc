#include "coordinator/store/checkpointer.h"

#include <chrono>

#include "common/log.h"

namespace benchfleet {

StatusOr<std::unique_ptr<WalCheckpointer>> WalCheckpointer::Start(const std::string& path,
                                                                  sqlite3* writer) {
  std::unique_ptr<WalCheckpointer> checkpointer(new WalCheckpointer(path, writer));
  // The hook replaces SQLite's automatic checkpoint on this connection.
  sqlite3_wal_hook(writer, &WalCheckpointer::OnCommit, checkpointer.get());
  checkpointer->thread_ = std::thread([raw = checkpointer.get()] { raw->Run(); });
  return checkpointer;
}

WalCheckpointer::~WalCheckpointer() {
  // The writer's next commit (the store closing) must not reach a destroyed object;
  // SQLite's automatic checkpoint takes over again, at the same kCheckpointPages.
  sqlite3_wal_hook(writer_, nullptr, nullptr);
  sqlite3_wal_autocheckpoint(writer_, kCheckpointPages);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

// Runs on the writer's thread after each commit, with the log's size in pages.
int WalCheckpointer::OnCommit(void* self, sqlite3* db, const char* schema, int log_pages) {
  auto* checkpointer = static_cast<WalCheckpointer*>(self);
  if (log_pages >= kCheckpointPagesHardLimit) {
    // The thread fell behind: a writer that never pauses outruns passive checkpoints,
    // and the log starts over only once all of it is copied. Wait for the thread's
    // checkpoint to end (SQLite refuses a second one at once, busy handler or not), then
    // copy everything here: the next commit starts the log from its beginning.
    std::lock_guard<std::mutex> hold(checkpointer->checkpointing_);
    const int rc = sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_FULL, nullptr, nullptr);
    checkpointer->writer_checkpoints_.fetch_add(1);
    LOG_WARN("checkpointer: the log reached " << log_pages << " pages; the writer checkpointed it ("
                                              << (rc == SQLITE_OK ? "done" : sqlite3_errstr(rc))
                                              << ")");
    return SQLITE_OK;
  }
  if (log_pages >= kCheckpointPages) {
    {
      std::lock_guard<std::mutex> lock(checkpointer->mutex_);
      checkpointer->due_ = true;
    }
    checkpointer->wake_.notify_one();
  }
  return SQLITE_OK;
}

void WalCheckpointer::Run() {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    LOG_ERROR("checkpointer: cannot open "
              << path_ << ": " << (db ? sqlite3_errmsg(db) : "out of memory")
              << "; the writer checkpoints at " << kCheckpointPagesHardLimit << " log pages");
    sqlite3_close(db);
    return;
  }
  // A checkpoint syncs the log before it copies and the database file after.
  sqlite3_exec(db, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
  bool failing = false;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait(lock, [this] { return due_ || stop_; });
    if (stop_) break;
    due_ = false;
    lock.unlock();
    int rc = SQLITE_OK;
    {
      std::lock_guard<std::mutex> hold(checkpointing_);
      rc = sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    }
    if (rc == SQLITE_OK) {
      checkpoints_.fetch_add(1);
      failing = false;
    } else if (rc != SQLITE_BUSY &&
               !failing) {  // busy: another checkpoint ran; the next commit's call retries
      LOG_ERROR("checkpointer: " << sqlite3_errmsg(db)
                                 << " (the log keeps every commit; retried later)");
      failing = true;
    }
    lock.lock();
  }
  lock.unlock();
  sqlite3_close(db);
}

}  // namespace benchfleet
