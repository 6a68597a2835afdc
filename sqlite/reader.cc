#include "sqlite/reader.h"

#include <cctype>
#include <cstdio>
#include <filesystem>

#include "common/clock.h"
#include "sqlite/read_guard.h"

namespace benchfleet {
namespace {

// A reader waits this long for a lock (a checkpoint) before the query fails.
constexpr int kReaderBusyTimeoutMs = 500;

int QueryProgress(void* deadline_ptr) {
  auto* deadline = static_cast<MonoTime*>(deadline_ptr);
  return MonoNow() > *deadline ? 1 : 0;  // non-zero interrupts the statement
}

// The first read of a connection: where SQLite opens the -wal and -shm files, and
// finds out whether the file is a database at all.
Status ReadSchema(Database& db) {
  ASSIGN_OR_RETURN(auto stmt, db.Prepare("SELECT count(*) FROM sqlite_master"));
  return stmt.Step().status();
}

// `path` as an SQLite file: URI (RFC 3986 percent-encoding of all but unreserved
// characters and '/').
std::string FileUri(const std::string& path) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      uri += escaped;
    }
  }
  return uri;
}

bool FileExists(const std::string& path) {
  std::error_code error;
  return std::filesystem::exists(path, error);
}

}  // namespace

StatusOr<std::unique_ptr<StoreReader>> StoreReader::Connect(const std::string& name, int flags) {
  ASSIGN_OR_RETURN(auto db, Database::Open(name, flags));
  sqlite3_busy_timeout(db->handle(), kReaderBusyTimeoutMs);
  std::unique_ptr<StoreReader> reader(new StoreReader(std::move(db)));
  GuardReadOnly(reader->db_->handle(), &reader->denied_);
  return reader;
}

StatusOr<std::unique_ptr<StoreReader>> StoreReader::Open(const std::string& path) {
  // SQLite's own answer for a missing file is "unable to open database file".
  if (!FileExists(path)) return NotFound("no store at " + path + ": no such file");
  ASSIGN_OR_RETURN(auto reader, Connect(path, SQLITE_OPEN_READONLY));
  const Status read = ReadSchema(*reader->db_);
  if (read.ok()) return reader;
  const int code = sqlite3_extended_errcode(reader->db_->handle()) & 0xff;
  reader.reset();
  if (code == SQLITE_NOTADB) return InvalidArgument(path + " is not an SQLite database");
  const std::string wal = path + "-wal";
  if (code == SQLITE_CANTOPEN || code == SQLITE_READONLY) {
    if (!FileExists(wal)) {
      // A WAL store with no log to replay, in a directory where SQLite may not make its
      // -wal and -shm (a read-only copy or mount): the file alone is the whole store,
      // and nothing can write it while no -wal exists, so it is read as immutable.
      ASSIGN_OR_RETURN(
          reader, Connect(FileUri(path) + "?immutable=1", SQLITE_OPEN_READONLY | SQLITE_OPEN_URI));
      RETURN_IF_ERROR(ReadSchema(*reader->db_));
      return reader;
    }
    // Committed results may be in the log only; reading the file without it would show
    // an older store as if it were the whole one, so refuse instead.
    return FailedPrecondition("cannot read " + path + ": its write-ahead log " + wal +
                              " is read through an index file (" + path +
                              "-shm) that SQLite cannot make or open there (" + read.message() +
                              "); copy the store together with its -wal file to a directory you "
                              "can write, or fold the log into "
                              "the store where it is writable: sqlite3 " +
                              path + " \"PRAGMA wal_checkpoint(TRUNCATE)\"");
  }
  return Unavailable("cannot read " + path + ": " + read.message());
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
  denied_.clear();
  auto prepared = db_->PrepareOne(sql);
  if (!prepared.ok()) {
    // SQLite says only "not authorized"; the guard wrote down why. (A refused second
    // statement keeps PrepareOne's "only one SQL statement" message.)
    const std::string& message = prepared.status().message();
    if (!denied_.empty() && message.find("only one SQL statement") == std::string::npos) {
      return InvalidArgument(denied_);
    }
    return prepared.status();
  }
  Statement stmt = std::move(*prepared);
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
    if (!found)
      return NotFound("no sweep " + std::to_string(*sweep_id) + " (benchfleet status lists them)");
  }
  std::string sql = "SELECT * FROM result_summary";
  if (sweep_id) sql += " WHERE sweep_id = ?1";
  sql += " ORDER BY sweep_id, host, model, mode, dtype, batch_size, threads, job_id";
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare(sql));
  if (sweep_id) stmt.Bind(1, *sweep_id);
  return RunRows(stmt, max_rows);
}

}  // namespace benchfleet
