#include "sqlite/schema.h"

#include <algorithm>
#include <set>

#include "common/log.h"
#include "common/result_fields.h"

namespace benchfleet {
namespace {

// Where views.sql's result_summary takes the declared result columns.
constexpr const char* kResultColumnsMarker = "{result_columns}";

// The tables that get a column per declared field, with their fields.
const std::vector<std::pair<std::string, const std::vector<ResultField>*>>& FieldTables() {
  static const std::vector<std::pair<std::string, const std::vector<ResultField>*>> tables = {
      {"results", &ResultFields()},
      {"calibrations", &CalibrationFields()},
      {"result_ranks", &RankFields()}};
  return tables;
}

using TextRows = std::vector<std::vector<std::string>>;

// Every row of `sql` as text (NULL as ""). Not through Database::Prepare: the store
// caches the statements it prepares, a fixed set, and these texts name tables.
StatusOr<TextRows> Rows(Database& db, const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr) !=
      SQLITE_OK) {
    std::string message = sqlite3_errmsg(db.handle());
    sqlite3_finalize(stmt);
    return InvalidArgument("SQLite: " + message);
  }
  TextRows rows;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    std::vector<std::string>& row = rows.emplace_back();
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
      const unsigned char* text = sqlite3_column_text(stmt, i);
      row.push_back(text ? reinterpret_cast<const char*>(text) : "");
    }
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) return Unavailable("SQLite: " + std::string(sqlite3_errmsg(db.handle())));
  return rows;
}

std::string Quoted(const std::string& name) {
  std::string out = "\"";
  for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string QuotedText(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

StatusOr<int64_t> PragmaInt(Database& db, const std::string& pragma) {
  ASSIGN_OR_RETURN(TextRows rows, Rows(db, "PRAGMA " + pragma));
  if (rows.empty() || rows[0].empty()) return Unavailable("PRAGMA " + pragma + " returned nothing");
  return std::stoll(rows[0][0]);
}

// The names of the objects of `type` that `sql` creates, in its order: run in a scratch
// database, where a view need not find what it reads.
StatusOr<std::vector<std::string>> CreatedBy(const std::string& sql, const std::string& type) {
  ASSIGN_OR_RETURN(auto scratch,
                   Database::Open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  RETURN_IF_ERROR(scratch->Exec(sql));
  ASSIGN_OR_RETURN(TextRows rows, Rows(*scratch, "SELECT name FROM sqlite_master WHERE type = " +
                                                     QuotedText(type) + " ORDER BY rowid"));
  std::vector<std::string> names;
  for (const auto& row : rows) names.push_back(row[0]);
  return names;
}

bool HasObject(Database& db, const std::string& type, const std::string& name) {
  auto rows = Rows(db, "SELECT 1 FROM sqlite_master WHERE type = " + QuotedText(type) +
                           " AND name = " + QuotedText(name));
  return rows.ok() && !rows->empty();
}

struct Column {
  std::string name, type;
  bool generated = false;
};

StatusOr<std::vector<Column>> ColumnsOf(Database& db, const std::string& table) {
  ASSIGN_OR_RETURN(TextRows rows, Rows(db, "SELECT name, type, hidden FROM pragma_table_xinfo(" +
                                               QuotedText(table) + ")"));
  std::vector<Column> columns;
  for (const auto& row : rows) columns.push_back({row[0], row[1], row[2] != "0"});
  return columns;
}

// Whether a row's identity is a rowid that no column holds: a rowid table without an
// INTEGER PRIMARY KEY (schedule_firings). Its rowids are copied too, so rows keep their
// order and identity.
StatusOr<bool> HasHiddenRowid(Database& db, const std::string& table) {
  if (!Rows(db, "SELECT rowid FROM " + Quoted(table) + " LIMIT 0").ok()) {
    return false;  // WITHOUT ROWID: its key is in its columns
  }
  ASSIGN_OR_RETURN(TextRows keys, Rows(db, "SELECT upper(type) FROM pragma_table_info(" +
                                               QuotedText(table) + ") WHERE pk > 0"));
  return !(keys.size() == 1 && keys[0][0] == "INTEGER");
}

// Copies every row of `from` (an old table) into `to` (the baseline's), column by
// column. A column of `from` that `to` lacks (a field no longer declared, a column added
// by hand) is added to `to` rather than lost.
Status CopyRows(Database& db, const std::string& from, const std::string& to) {
  ASSIGN_OR_RETURN(std::vector<Column> source, ColumnsOf(db, from));
  ASSIGN_OR_RETURN(std::vector<Column> target, ColumnsOf(db, to));
  std::set<std::string> in_target;
  for (const Column& column : target) in_target.insert(column.name);
  std::string names;
  for (const Column& column : source) {
    if (column.generated) continue;  // computed again from the copied columns
    if (!in_target.count(column.name)) {
      RETURN_IF_ERROR(db.Exec("ALTER TABLE " + Quoted(to) + " ADD COLUMN " + Quoted(column.name) +
                              " " + column.type));
      LOG_WARN("kept column " << to << "." << column.name
                              << ", which the schema does not declare, with its values");
    } else if (std::find_if(target.begin(), target.end(), [&](const Column& c) {
                 return c.name == column.name && c.generated;
               }) != target.end()) {
      continue;
    }
    names += (names.empty() ? "" : ", ") + Quoted(column.name);
  }
  ASSIGN_OR_RETURN(bool rowid, HasHiddenRowid(db, to));
  if (rowid) names = "rowid, " + names;
  return db.Exec("INSERT INTO " + Quoted(to) + " (" + names + ") SELECT " + names + " FROM " +
                 Quoted(from));
}

Status ApplyBaseline(Database& db) {
  const Migration& baseline = Migrations().front();
  Status applied = db.Exec(baseline.sql);
  if (!applied.ok())
    return Internal("migration " + baseline.name + " failed: " + applied.message());
  return AddDeclaredColumns(db, /*log=*/false);
}

// A store made by the numbered steps before the baseline (user_version 1..25, no
// application_id), at any of them: every table the baseline has is made anew from the
// baseline and filled with the old table's rows, and schemas/legacy_upgrade.sql does
// what the old steps the store missed did to rows. The result is the schema a new store
// has, holding the old rows (schemas/README.md). One transaction: a conversion that
// fails leaves the store as it was.
Status ConvertLegacyStore(Database& db, int64_t legacy_version, const std::string& path) {
  LOG_INFO("converting " << path << " from schema version " << legacy_version
                         << " of the numbering before the baseline; every row is copied once");
  // The copies' temporary storage (statement journals, the indexes' sorts) in files, not
  // in memory as the store keeps it for its small writes: converting 200,000 results
  // took 312 MB of memory so, 41 MB with files.
  ASSIGN_OR_RETURN(int64_t temp_store, PragmaInt(db, "temp_store"));
  RETURN_IF_ERROR(db.Exec("PRAGMA temp_store = FILE"));
  struct RestoreTempStore {
    Database& db;
    int64_t mode;
    ~RestoreTempStore() { (void)db.Exec("PRAGMA temp_store = " + std::to_string(mode)); }
  } restore{db, temp_store};
  Transaction tx(db);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(std::vector<std::string> tables, CreatedBy(Migrations().front().sql, "table"));
  std::vector<std::string> old_tables;
  for (const std::string& table : tables) {
    if (HasObject(db, "table", table)) old_tables.push_back(table);
  }
  // The old views read the old tables; views.sql makes them again. Their indexes and
  // triggers carry names the baseline's take.
  ASSIGN_OR_RETURN(std::vector<std::string> views, ViewNames());
  for (const std::string& view : views) {
    if (HasObject(db, "view", view)) RETURN_IF_ERROR(db.Exec("DROP VIEW " + Quoted(view)));
  }
  for (const std::string& table : old_tables) {
    ASSIGN_OR_RETURN(TextRows objects,
                     Rows(db,
                          "SELECT type, name FROM sqlite_master WHERE type IN ('index', 'trigger') "
                          "AND sql IS NOT NULL AND tbl_name = " +
                              QuotedText(table)));
    for (const auto& object : objects) {
      RETURN_IF_ERROR(db.Exec("DROP " + std::string(object[0] == "index" ? "INDEX " : "TRIGGER ") +
                              Quoted(object[1])));
    }
  }
  // The legacy rename leaves what names the old tables as it is: it all goes with them.
  RETURN_IF_ERROR(db.Exec("PRAGMA legacy_alter_table = ON"));
  for (const std::string& table : old_tables) {
    RETURN_IF_ERROR(
        db.Exec("ALTER TABLE " + Quoted(table) + " RENAME TO " + Quoted("legacy_" + table)));
  }
  RETURN_IF_ERROR(db.Exec("PRAGMA legacy_alter_table = OFF"));
  RETURN_IF_ERROR(ApplyBaseline(db));
  // The rows go in before the indexes and triggers: the triggers would count the copied
  // jobs again, and a unique index would refuse the duplicates legacy_upgrade.sql drops.
  ASSIGN_OR_RETURN(TextRows objects,
                   Rows(db,
                        "SELECT type, name, sql, tbl_name FROM sqlite_master "
                        "WHERE type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY rowid"));
  TextRows built;
  for (const auto& object : objects) {
    if (std::find(tables.begin(), tables.end(), object[3]) == tables.end()) continue;
    RETURN_IF_ERROR(db.Exec("DROP " + std::string(object[0] == "index" ? "INDEX " : "TRIGGER ") +
                            Quoted(object[1])));
    built.push_back(object);
  }
  for (const std::string& table : old_tables)
    RETURN_IF_ERROR(CopyRows(db, "legacy_" + table, table));
  Status upgraded = db.Exec(LegacyUpgradeSql());
  if (!upgraded.ok()) return Internal("legacy_upgrade.sql failed: " + upgraded.message());
  for (const auto& object : built) RETURN_IF_ERROR(db.Exec(object[2]));
  for (const std::string& table : old_tables)
    RETURN_IF_ERROR(db.Exec("DROP TABLE " + Quoted("legacy_" + table)));
  RETURN_IF_ERROR(
      db.Exec("PRAGMA application_id = " + std::to_string(kStoreApplicationId) +
              "; PRAGMA user_version = " + std::to_string(Migrations().front().version)));
  RETURN_IF_ERROR(tx.Commit());
  LOG_INFO("converted " << path << " to schema version " << Migrations().front().version);
  // The old tables' pages are free now, as many as the store had: back to the file
  // system at once, while nothing else waits on the store (best effort: a store without
  // incremental vacuum is vacuumed whole when it opens, Store::UseIncrementalVacuum).
  Status reclaimed = db.Exec("PRAGMA incremental_vacuum");
  if (!reclaimed.ok()) LOG_WARN("kept the free pages of " << path << ": " << reclaimed.message());
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> ViewsSqlWithDeclaredColumns() {
  std::string columns;
  for (const ResultField& field : ResultFields()) {
    if (!field.column.empty()) columns += (columns.empty() ? "r." : ", r.") + field.column;
  }
  std::string sql = ViewsSql();
  const size_t at = sql.find(kResultColumnsMarker);
  if (at == std::string::npos)
    return Internal(std::string("schemas/views.sql has no ") + kResultColumnsMarker);
  return sql.replace(at, std::string(kResultColumnsMarker).size(), columns);
}

StatusOr<std::vector<std::string>> ViewNames() {
  ASSIGN_OR_RETURN(std::string sql, ViewsSqlWithDeclaredColumns());
  return CreatedBy(sql, "view");
}

Status AddDeclaredColumns(Database& db, bool log) {
  for (const auto& [table, fields] : FieldTables()) {
    ASSIGN_OR_RETURN(std::vector<Column> columns, ColumnsOf(db, table));
    std::set<std::string> present;
    for (const Column& column : columns) present.insert(column.name);
    for (const ResultField& field : *fields) {
      if (field.column.empty() || present.count(field.column)) continue;
      RETURN_IF_ERROR(db.Exec("ALTER TABLE " + table + " ADD COLUMN " + field.column + " " +
                              SqlType(field.type)));
      present.insert(field.column);
      if (log)
        LOG_INFO("added column " << table << "." << field.column
                                 << " (declared in result_fields.json)");
    }
  }
  return Status::Ok();
}

Status RecreateViews(Database& db) {
  ASSIGN_OR_RETURN(std::string sql, ViewsSqlWithDeclaredColumns());
  ASSIGN_OR_RETURN(std::vector<std::string> views, ViewNames());
  for (const std::string& view : views) {
    if (HasObject(db, "view", view)) RETURN_IF_ERROR(db.Exec("DROP VIEW " + Quoted(view)));
  }
  Status created = db.Exec(sql);
  if (!created.ok()) return Internal("schemas/views.sql failed: " + created.message());
  return Status::Ok();
}

Status MigrateSchema(Database& db, const std::string& path) {
  ASSIGN_OR_RETURN(int64_t application_id, PragmaInt(db, "application_id"));
  ASSIGN_OR_RETURN(int64_t version, PragmaInt(db, "user_version"));
  if (application_id == 0 && version > 0) {
    if (version > kLastLegacyVersion) {
      return FailedPrecondition(
          path + " has schema version " + std::to_string(version) +
          " without benchfleet's application_id: not a store this coordinator "
          "knows (newer, or not benchfleet's)");
    }
    RETURN_IF_ERROR(ConvertLegacyStore(db, version, path));
    version = Migrations().front().version;
  } else if (application_id != 0 && application_id != kStoreApplicationId) {
    return FailedPrecondition(path + " is not a benchfleet store (application_id " +
                              std::to_string(application_id) + ")");
  }
  const int latest = Migrations().empty() ? 0 : Migrations().back().version;
  if (version > latest) {
    return FailedPrecondition(path + " has schema version " + std::to_string(version) +
                              ", newer than this coordinator knows (" + std::to_string(latest) +
                              "); use a newer benchfleet-coordinator");
  }
  for (const Migration& m : Migrations()) {
    if (m.version <= version) continue;
    Transaction tx(db);
    RETURN_IF_ERROR(tx.Begin());
    if (&m == &Migrations().front()) {
      RETURN_IF_ERROR(ApplyBaseline(db));
    } else {
      Status applied = db.Exec(m.sql);
      if (!applied.ok()) return Internal("migration " + m.name + " failed: " + applied.message());
    }
    RETURN_IF_ERROR(db.Exec("PRAGMA application_id = " + std::to_string(kStoreApplicationId) +
                            "; PRAGMA user_version = " + std::to_string(m.version)));
    RETURN_IF_ERROR(tx.Commit());
    LOG_INFO("applied migration " << m.name);
  }
  return Status::Ok();
}

}  // namespace benchfleet
