#include "sqlite/sqlite.h"

namespace benchfleet {

StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Unavailable("cannot open database " + path + ": " + message);
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<Database>(new Database(db));
}

Database::~Database() {
  for (auto& [sql, cached] : statements_) sqlite3_finalize(cached.stmt);
  sqlite3_close_v2(db_);
}

std::string Database::LastError() const {
  return std::string(sqlite3_errstr(sqlite3_extended_errcode(db_) & 0xff)) + " (" +
         sqlite3_errmsg(db_) + ")";
}

Status Database::Exec(const std::string& sql) {
  char* error = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string message = error ? error : sqlite3_errstr(rc);
  sqlite3_free(error);
  return Unavailable("SQLite: " + message);
}

Status Database::ExecCached(const std::string& sql) {
  ASSIGN_OR_RETURN(Statement statement, Prepare(sql));
  return statement.Run();
}

// Enough for every statement text the store uses; past it, statements are not cached.
constexpr size_t kMaxCachedStatements = 128;

StatusOr<Statement> Database::Prepare(const std::string& sql) {
  if (cache_statements_) {
    auto found = statements_.find(sql);
    if (found != statements_.end() && !found->second.in_use) {
      found->second.in_use = true;
      return Statement(this, found->second.stmt, &found->second.in_use);
    }
    if (found == statements_.end() && statements_.size() < kMaxCachedStatements) {
      sqlite3_stmt* stmt = nullptr;
      int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                  SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
      if (rc != SQLITE_OK) {
        sqlite3_finalize(stmt);
        return InvalidArgument("SQLite: " + std::string(sqlite3_errmsg(db_)));
      }
      if (stmt == nullptr) return InvalidArgument("SQLite: empty statement");
      CachedStatement& cached = statements_[sql];
      cached.stmt = stmt;
      cached.in_use = true;
      return Statement(this, stmt, &cached.in_use);
    }
  }
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return InvalidArgument("SQLite: " + std::string(sqlite3_errmsg(db_)));
  }
  if (stmt == nullptr) return InvalidArgument("SQLite: empty statement");
  return Statement(this, stmt);
}

StatusOr<Statement> Database::PrepareOne(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt, &tail);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return InvalidArgument("SQLite: " + std::string(sqlite3_errmsg(db_)));
  }
  if (stmt == nullptr) return InvalidArgument("SQLite: empty statement");
  Statement first(this, stmt);
  // What follows the first statement must be nothing but blanks, ';' and comments: a
  // second statement is refused rather than silently dropped.
  const char* end = sql.c_str() + sql.size();
  while (tail != nullptr && tail < end) {
    sqlite3_stmt* next = nullptr;
    const char* rest = nullptr;
    rc = sqlite3_prepare_v2(db_, tail, static_cast<int>(end - tail), &next, &rest);
    sqlite3_finalize(next);
    if (rc != SQLITE_OK || next != nullptr) {
      return InvalidArgument("only one SQL statement is allowed; found more after \"" +
                             sql.substr(0, static_cast<size_t>(tail - sql.c_str())) + "\"");
    }
    if (rest == tail) break;
    tail = rest;
  }
  return first;
}

Statement::~Statement() {
  if (in_use_ == nullptr) {
    sqlite3_finalize(stmt_);
    return;
  }
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  *in_use_ = false;
}

Statement& Statement::Bind(int pos, int64_t value) {
  sqlite3_bind_int64(stmt_, pos, value);
  return *this;
}
Statement& Statement::Bind(int pos, double value) {
  sqlite3_bind_double(stmt_, pos, value);
  return *this;
}
Statement& Statement::Bind(int pos, const std::string& value) {
  sqlite3_bind_text(stmt_, pos, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::BindBlob(int pos, const std::string& bytes) {
  sqlite3_bind_blob(stmt_, pos, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::BindNull(int pos) {
  sqlite3_bind_null(stmt_, pos);
  return *this;
}

Statement& Statement::BindJson(int pos, const nlohmann::json& value) {
  if (value.is_null()) return BindNull(pos);
  if (value.is_boolean()) return Bind(pos, static_cast<int64_t>(value.get<bool>() ? 1 : 0));
  if (value.is_number_integer()) return Bind(pos, value.get<int64_t>());
  if (value.is_number()) return Bind(pos, value.get<double>());
  if (value.is_string()) return Bind(pos, value.get<std::string>());
  return Bind(pos, value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

StatusOr<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Unavailable("SQLite: " + db_->LastError());
}

Status Statement::Run() {
  auto stepped = Step();
  if (!stepped.ok()) return stepped.status();
  return Status::Ok();
}

std::string Statement::Text(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt_, col));
}

std::string Statement::Blob(int col) const {
  const void* bytes = sqlite3_column_blob(stmt_, col);
  if (bytes == nullptr) return "";
  return std::string(static_cast<const char*>(bytes), sqlite3_column_bytes(stmt_, col));
}

nlohmann::json Statement::ColumnJson(int col) const {
  switch (sqlite3_column_type(stmt_, col)) {
    case SQLITE_INTEGER:
      return Int(col);
    case SQLITE_FLOAT:
      return Real(col);
    case SQLITE_TEXT:
      return Text(col);
    case SQLITE_BLOB:
      return "<blob " + std::to_string(sqlite3_column_bytes(stmt_, col)) + " bytes>";
    default:
      return nullptr;
  }
}

void Database::OpenGroup() {
  group_open_ = true;
  group_begun_ = false;
  group_error_ = Status::Ok();
}

Status Database::JoinGroup() {
  if (!group_open_) return Status::Ok();
  if (!group_error_.ok()) return group_error_;
  if (!group_begun_) {
    Status begun = Exec("BEGIN IMMEDIATE");
    if (!begun.ok()) {
      // Every later write of this group would wait out the busy timeout again.
      group_error_ = begun;
      return begun;
    }
    group_begun_ = true;
    return Status::Ok();
  }
  if (sqlite3_get_autocommit(db_) != 0) {
    group_error_ =
        Unavailable("SQLite: this group's transaction was rolled back by an earlier error");
    return group_error_;
  }
  return Status::Ok();
}

Status Database::CommitGroup() {
  group_open_ = false;
  if (!group_begun_) return Status::Ok();  // nothing written (or BEGIN failed: each write said so)
  group_begun_ = false;
  if (sqlite3_get_autocommit(db_) != 0) {
    return group_error_.ok() ? Unavailable("SQLite: this group's transaction was rolled back")
                             : group_error_;
  }
  Status committed = Exec("COMMIT");
  if (!committed.ok() && sqlite3_get_autocommit(db_) == 0) (void)Exec("ROLLBACK");
  return committed;
}

Status Transaction::Begin() {
  // Within a group or another transaction: a savepoint, undone alone on failure.
  const bool nested = sqlite3_get_autocommit(db_.handle()) == 0;
  if (db_.group_open() || nested) {
    if (db_.group_open()) RETURN_IF_ERROR(db_.JoinGroup());
    savepoint_ = true;
    Status s = db_.ExecCached("SAVEPOINT tx");
    active_ = s.ok();
    return s;
  }
  Status s = db_.Exec("BEGIN IMMEDIATE");
  active_ = s.ok();
  return s;
}

Status Transaction::Commit() {
  Status s = savepoint_ ? db_.ExecCached("RELEASE tx") : db_.Exec("COMMIT");
  if (s.ok()) active_ = false;
  return s;
}

Transaction::~Transaction() {
  if (!active_) return;
  // After SQLite rolled the group back by itself the savepoint is gone; the group
  // reports that at its next write or at CommitGroup.
  if (savepoint_) {
    if (sqlite3_get_autocommit(db_.handle()) == 0) (void)db_.Exec("ROLLBACK TO tx; RELEASE tx");
  } else {
    (void)db_.Exec("ROLLBACK");
  }
}

Status InsertRow(Database& db, const std::string& table, const ColumnValues& columns) {
  std::string names, slots;
  for (size_t i = 0; i < columns.size(); ++i) {
    names += (i ? ", " : "") + columns[i].first;
    slots += (i ? ", ?" : "?") + std::to_string(i + 1);
  }
  ASSIGN_OR_RETURN(auto insert,
                   db.Prepare("INSERT INTO " + table + "(" + names + ") VALUES (" + slots + ")"));
  for (size_t i = 0; i < columns.size(); ++i)
    insert.BindJson(static_cast<int>(i + 1), columns[i].second);
  return insert.Run();
}

}  // namespace benchfleet
