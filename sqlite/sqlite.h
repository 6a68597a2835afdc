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
#include <unordered_map>
#include <utility>
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
  // One statement without results, prepared once and kept (Prepare's cache): for those
  // run per job (a savepoint and its release), where Exec's parse each time showed.
  Status ExecCached(const std::string& sql);
  // With statement caching on, a statement is compiled once and reused: the Statement
  // handed out resets it when it goes, so an early return cannot leave it mid-step
  // holding a read snapshot. The same text asked for while its cached copy is in use
  // (a nested call) gets a fresh statement.
  StatusOr<Statement> Prepare(const std::string& sql);
  // For a connection whose statements come from a fixed set of texts (the store's);
  // never for one that runs users' SQL.
  void CacheStatements() { cache_statements_ = true; }
  // Prepares exactly one statement: text after it other than blanks and comments is an
  // error (a user's "select 1; delete ..." is refused, not cut short).
  StatusOr<Statement> PrepareOne(const std::string& sql);
  int64_t LastInsertRowid() const { return sqlite3_last_insert_rowid(db_); }
  int Changes() const { return sqlite3_changes(db_); }
  sqlite3* handle() { return db_; }
  // "SQLITE_FULL: database or disk is full" style text for the latest error.
  std::string LastError() const;

  // Group commit. While a group is open, the first write (Transaction::Begin) begins
  // one transaction and every later write joins it as a savepoint, so a failed write
  // undoes only itself; CommitGroup then makes them all durable with one sync instead
  // of one per write. A write after the group's transaction was lost (SQLite rolls a
  // transaction back by itself on a full disk or an I/O error) fails, so nothing is
  // committed outside the group.
  void OpenGroup();
  // Ok when everything written since OpenGroup is committed (or nothing was written);
  // otherwise all of it is rolled back and the error says why.
  Status CommitGroup();
  bool group_open() const { return group_open_; }
  // Begins the group's transaction on the first write; fails once the group is lost.
  // Not grouping: nothing to do.
  Status JoinGroup();

 private:
  explicit Database(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  struct CachedStatement {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  bool cache_statements_ = false;
  std::unordered_map<std::string, CachedStatement> statements_;  // node-based: stable entries
  bool group_open_ = false;
  bool group_begun_ = false;
  Status group_error_;  // why the group's writes fail (a BEGIN that failed, a lost group)
};

// A row's values by column name, each bound by its JSON type (Statement::BindJson).
using ColumnValues = std::vector<std::pair<std::string, nlohmann::json>>;
// INSERT INTO table(name, ...) VALUES (...): for the writes made once per sweep, host or
// candidate, not per job (those keep a statement text of their own).
Status InsertRow(Database& db, const std::string& table, const ColumnValues& columns);

// A prepared statement; Bind* take 1-based positions as SQLite does.
class Statement {
 public:
  Statement(Statement&& other) noexcept
      : db_(other.db_), stmt_(other.stmt_), in_use_(other.in_use_) {
    other.stmt_ = nullptr;
    other.in_use_ = nullptr;
  }
  Statement(const Statement&) = delete;
  ~Statement();

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
  Statement(Database* db, sqlite3_stmt* stmt, bool* in_use = nullptr)
      : db_(db), stmt_(stmt), in_use_(in_use) {}
  Database* db_;
  sqlite3_stmt* stmt_;
  bool* in_use_;  // a cached statement: reset and handed back, not finalized
};

// BEGIN IMMEDIATE on Begin(), ROLLBACK on destruction unless Commit() succeeded.
// Inside an open group (Database::OpenGroup) or another transaction it is a savepoint
// of that transaction: Commit() releases it, and only the outer commit makes it
// durable.
class Transaction {
 public:
  explicit Transaction(Database& db) : db_(db) {}
  Status Begin();
  Status Commit();
  ~Transaction();

 private:
  Database& db_;
  bool active_ = false;
  bool savepoint_ = false;
};

}  // namespace benchfleet
