// A read-only connection to results.db for what users ask: `query` (their own SQL) and
// `results` (result_summary). The coordinator runs it on its query thread
// (coordinator/store/query_runner.h), never on the loop that serves heartbeats; the CLI opens
// one itself on a copied store (`--db`). SQLite refuses writes on it, the read guard
// (sqlite/read_guard.h) refuses ATTACH and everything else that is not a read, and a
// statement runs at most kQueryTimeLimitS and returns at most the rows asked for.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

struct Rows {
  std::vector<std::string> columns;
  std::vector<nlohmann::json> rows;  // each an array
  bool truncated = false;
};

// A user's statement may run at most this long before it is interrupted.
inline constexpr int kQueryTimeLimitS = 10;

class StoreReader {
 public:
  // Opens `path` read-only and reads its schema once, so that a file SQLite cannot read
  // fails here rather than at the first query: NotFound when there is no file,
  // InvalidArgument when it is not an SQLite database, FailedPrecondition when its
  // write-ahead log cannot be read where it lies (see the .cc). A store in WAL mode needs
  // its -shm index beside it, which SQLite makes when the directory is writable; with
  // no -wal file at all, a read-only directory is fine too (opened as immutable).
  static StatusOr<std::unique_ptr<StoreReader>> Open(const std::string& path);

  // Runs exactly one read-only statement; at most `max_rows` rows. A statement the read
  // guard refuses (ATTACH, a write, BEGIN, a PRAGMA that sets) is InvalidArgument with
  // the reason.
  StatusOr<Rows> Query(const std::string& sql, int max_rows);
  // Rows of result_summary, optionally for one sweep.
  StatusOr<Rows> ResultSummary(std::optional<int64_t> sweep_id, int max_rows);

 private:
  explicit StoreReader(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  // A guarded connection to `name` (a path, or a file: URI with SQLITE_OPEN_URI).
  static StatusOr<std::unique_ptr<StoreReader>> Connect(const std::string& name, int flags);
  StatusOr<Rows> RunRows(Statement& stmt, int max_rows);
  std::unique_ptr<Database> db_;
  std::string denied_;  // why the read guard refused the statement last prepared
};

}  // namespace benchfleet
