// What a connection that runs users' SQL lets through: reads of this store and nothing
// else. SQLite's read-only open refuses writes to the file, but not ATTACH (which would
// read, or create, any file the process can reach), nor statements that change the
// connection itself (BEGIN holding a snapshot that stops checkpoints, PRAGMA settings).
// The authorizer refuses those when the statement is prepared, with a reason a user can
// act on; the attached-database limit of 0 refuses ATTACH even should the authorizer
// be replaced.
#pragma once

#include <sqlite3.h>

#include <string>

namespace benchfleet {

// Installs the authorizer and the limit on `db`. `denied` must outlive the connection:
// each refusal writes its reason there (the caller clears it before preparing), since
// SQLite itself only reports "not authorized".
void GuardReadOnly(sqlite3* db, std::string* denied);

// Whether a PRAGMA named `name` with `argument` (null when none) only reports:
// table_info(results) and user_version do; user_version = 3 and journal_mode = delete
// do not.
bool ReadOnlyPragma(const std::string& name, const char* argument);

}  // namespace benchfleet
