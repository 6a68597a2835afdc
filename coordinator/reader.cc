#include "coordinator/reader.h"

#include "common/clock.h"

namespace benchfleet {
namespace {

// A reader waits this long for a lock (a checkpoint) before the query fails.
constexpr int kReaderBusyTimeoutMs = 500;

int QueryProgress(void* deadline_ptr) {
  auto* deadline = static_cast<MonoTime*>(deadline_ptr);
  return MonoNow() > *deadline ? 1 : 0;  // non-zero interrupts the statement
}

}  // namespace

StatusOr<std::unique_ptr<StoreReader>> StoreReader::Open(const std::string& path) {
  ASSIGN_OR_RETURN(auto db, Database::Open(path, SQLITE_OPEN_READONLY));
  sqlite3_busy_timeout(db->handle(), kReaderBusyTimeoutMs);
  return std::unique_ptr<StoreReader>(new StoreReader(std::move(db)));
}

StatusOr<Rows> StoreReader::RunRows(Statement& stmt, int max_rows) {
  Rows rows;
  for (int c = 0; c < stmt.ColumnCount(); ++c) rows.columns.push_back(stmt.ColumnName(c));
  MonoTime deadline = MonoNow() + std::chrono::seconds(kQueryTimeLimitS);
  sqlite3_progress_handler(db_->handle(), 10000, QueryProgress, &deadline);
  Status failed;
  while (true) {
    auto row = stmt.Step();
    if (!row.ok()) {
      failed = MonoNow() > deadline
                   ? DeadlineExceeded("query ran longer than " + std::to_string(kQueryTimeLimitS) +
                                      " s and was stopped")
                   : InvalidArgument(row.status().message());
      break;
    }
    if (!*row) break;
    if (static_cast<int>(rows.rows.size()) >= max_rows) {
      rows.truncated = true;
      break;
    }
    nlohmann::json values = nlohmann::json::array();
    for (int c = 0; c < stmt.ColumnCount(); ++c) values.push_back(stmt.ColumnJson(c));
    rows.rows.push_back(std::move(values));
  }
  sqlite3_progress_handler(db_->handle(), 0, nullptr, nullptr);
  if (!failed.ok()) return failed;
  return rows;
}

StatusOr<Rows> StoreReader::Query(const std::string& sql, int max_rows) {
  ASSIGN_OR_RETURN(auto stmt, db_->PrepareOne(sql));
  // Refuse writes with a clear message before SQLite's "attempt to write a readonly
  // database"; the read-only connection is the real guard.
  if (!stmt.ReadOnly()) return InvalidArgument("only read-only statements are allowed in query");
  return RunRows(stmt, max_rows);
}

StatusOr<Rows> StoreReader::ResultSummary(std::optional<int64_t> sweep_id, int max_rows) {
  // An unknown sweep is an error, not an empty table that looks like "no results yet".
  if (sweep_id) {
    ASSIGN_OR_RETURN(auto exists, db_->Prepare("SELECT 1 FROM sweeps WHERE sweep_id = ?1"));
    exists.Bind(1, *sweep_id);
    ASSIGN_OR_RETURN(bool found, exists.Step());
    if (!found) return NotFound("no sweep " + std::to_string(*sweep_id) + " (benchfleet status lists them)");
  }
  std::string sql = "SELECT * FROM result_summary";
  if (sweep_id) sql += " WHERE sweep_id = ?1";
  sql += " ORDER BY sweep_id, host, model, mode, dtype, batch_size, threads, job_id";
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare(sql));
  if (sweep_id) stmt.Bind(1, *sweep_id);
  return RunRows(stmt, max_rows);
}

}  // namespace benchfleet
