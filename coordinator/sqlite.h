// A thin RAII layer over the SQLite C API: connections, prepared statements with
// positional binding, transactions. Every failure comes back as a Status carrying
// SQLite's own message, so a full disk or a lock reaches the log and the client verbatim.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

class Statement;

class Database {
 public:
  // flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, or SQLITE_OPEN_READONLY.
  static StatusOr<std::unique_ptr<Database>> Open(const std::string& path, int flags);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one or more statements that return no rows.
  Status Exec(const std::string& sql);
  StatusOr<Statement> Prepare(const std::string& sql);
  // Prepares exactly one statement: text after it other than blanks and comments is an
  // error (a user's "select 1; delete ..." is refused, not cut short).
  StatusOr<Statement> PrepareOne(const std::string& sql);
  int64_t LastInsertRowid() const { return sqlite3_last_insert_rowid(db_); }
  int Changes() const { return sqlite3_changes(db_); }
  sqlite3* handle() { return db_; }
  // "SQLITE_FULL: database or disk is full" style text for the latest error.
  std::string LastError() const;

 private:
  explicit Database(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

// A prepared statement; Bind* take 1-based positions as SQLite does.
class Statement {
 public:
  Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) {
    other.stmt_ = nullptr;
  }
  Statement(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  Statement& Bind(int pos, int64_t value);
  Statement& Bind(int pos, int value) { return Bind(pos, static_cast<int64_t>(value)); }
  Statement& Bind(int pos, double value);
  Statement& Bind(int pos, const std::string& value);
  Statement& Bind(int pos, const char* value) { return Bind(pos, std::string(value)); }
  Statement& BindNull(int pos);
  Statement& BindBlob(int pos, const std::string& bytes);
  // Binds a JSON scalar by its type (null, integer, real, string, bool as 0/1);
  // arrays and objects are bound as their JSON text.
  Statement& BindJson(int pos, const nlohmann::json& value);

  // Advances: true when a row is available, false when done; errors as Status.
  StatusOr<bool> Step();
  // Runs a statement that returns no rows.
  Status Run();
  // Makes the statement ready to run again with new bindings.
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  int ColumnCount() const { return sqlite3_column_count(stmt_); }
  std::string ColumnName(int col) const { return sqlite3_column_name(stmt_, col); }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string Text(int col) const;
  std::string Blob(int col) const;
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  nlohmann::json ColumnJson(int col) const;
  bool ReadOnly() const { return sqlite3_stmt_readonly(stmt_) != 0; }

 private:
  friend class Database;
  Statement(Database* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Database* db_;
  sqlite3_stmt* stmt_;
};

// BEGIN IMMEDIATE on construction, ROLLBACK on destruction unless Commit() succeeded.
class Transaction {
 public:
  explicit Transaction(Database& db) : db_(db) {}
  Status Begin() {
    Status s = db_.Exec("BEGIN IMMEDIATE");
    active_ = s.ok();
    return s;
  }
  Status Commit();
  ~Transaction();

 private:
  Database& db_;
  bool active_ = false;
};

}  // namespace benchfleet
