// A read-only connection to results.db for what users ask: `query` (their own SQL) and
// `results` (result_summary). It runs on the query thread (coordinator/query_runner.h),
// never on the loop that serves heartbeats, and SQLite itself refuses writes on it.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "coordinator/sqlite.h"

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
  static StatusOr<std::unique_ptr<StoreReader>> Open(const std::string& path);

  // Runs exactly one read-only statement; at most `max_rows` rows.
  StatusOr<Rows> Query(const std::string& sql, int max_rows);
  // Rows of result_summary, optionally for one sweep.
  StatusOr<Rows> ResultSummary(std::optional<int64_t> sweep_id, int max_rows);

 private:
  explicit StoreReader(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  StatusOr<Rows> RunRows(Statement& stmt, int max_rows);
  std::unique_ptr<Database> db_;
};

}  // namespace benchfleet
