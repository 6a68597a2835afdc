#include "sqlite/read_guard.h"

#include <set>

namespace benchfleet {
namespace {

// Pragmas that report on the schema or the file, whatever their argument (a table or
// index name, a row count for the checks).
const std::set<std::string>& ReportingPragmas() {
  static const std::set<std::string> names = {
      "table_info",      "table_xinfo",      "table_list",        "index_list",      "index_info",
      "index_xinfo",     "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check",
      "database_list",   "collation_list",   "function_list",     "module_list",     "pragma_list",
      "compile_options", "page_count",       "freelist_count",    "data_version"};
  return names;
}

// Pragmas that report a setting when given no argument and change it when given one.
const std::set<std::string>& SettingPragmas() {
  static const std::set<std::string> names = {"user_version", "schema_version", "application_id",
                                              "page_size",    "journal_mode",   "encoding",
                                              "auto_vacuum",  "foreign_keys"};
  return names;
}

// The statement kinds a reader's statement is made of: the SELECT, each table or view
// column it reads, each function it calls and a WITH RECURSIVE.
bool IsRead(int action) {
  return action == SQLITE_SELECT || action == SQLITE_READ || action == SQLITE_FUNCTION ||
         action == SQLITE_RECURSIVE;
}

int AuthorizeRead(void* denied_ptr, int action, const char* arg1, const char* arg2,
                  const char* /*database*/, const char* /*trigger_or_view*/) {
  if (IsRead(action)) return SQLITE_OK;
  // SQLite compiles a table-valued PRAGMA function (pragma_table_info('t')), the first
  // time a connection meets it, by way of an UPDATE of sqlite_master that it never
  // runs. A user's own UPDATE of sqlite_master is refused all the same: it is not a
  // read-only statement (StoreReader::Query) and the connection cannot write.
  if (action == SQLITE_UPDATE && arg1 != nullptr && std::string(arg1) == "sqlite_master")
    return SQLITE_OK;
  auto* denied = static_cast<std::string*>(denied_ptr);
  switch (action) {
    case SQLITE_PRAGMA:
      if (arg1 != nullptr && ReadOnlyPragma(arg1, arg2)) return SQLITE_OK;
      *denied = "PRAGMA " + std::string(arg1 ? arg1 : "") +
                (arg2 ? " = " + std::string(arg2) : "") +
                " is not allowed: only pragmas that report (table_info, index_list, user_version, "
                "...) run here";
      return SQLITE_DENY;
    case SQLITE_ATTACH:  // also what VACUUM INTO asks for, to write its copy
    case SQLITE_DETACH:
      *denied =
          "ATTACH, DETACH and VACUUM INTO are not allowed: statements here read the results store "
          "and open no other file";
      return SQLITE_DENY;
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
      *denied = "transactions are not allowed: each statement here runs on its own";
      return SQLITE_DENY;
    default:
      *denied = "only read-only statements are allowed (SELECT, WITH, reporting PRAGMAs)";
      return SQLITE_DENY;
  }
}

}  // namespace

bool ReadOnlyPragma(const std::string& name, const char* argument) {
  if (ReportingPragmas().count(name)) return true;
  return argument == nullptr && SettingPragmas().count(name) > 0;
}

void GuardReadOnly(sqlite3* db, std::string* denied) {
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_set_authorizer(db, AuthorizeRead, denied);
}

}  // namespace benchfleet
