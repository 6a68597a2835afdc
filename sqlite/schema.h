// The store's schema and how a store gets it (schemas/README.md): the numbered
// migrations from the baseline (schemas/migrations), a column for every field declared
// in schemas/result_fields.json, the views (schemas/views.sql), and the one-time
// conversion of a store made by the numbered steps that came before the baseline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

// PRAGMA application_id of a store numbered from the baseline ("bflt"). The steps
// before the baseline left it 0 and counted user_version 1..kLastLegacyVersion, so the
// two numberings never meet: a store without the id at version 0 is new, one at
// 1..kLastLegacyVersion is converted (ConvertLegacyStore).
constexpr int32_t kStoreApplicationId = 0x62666c74;
constexpr int kLastLegacyVersion = 25;

// The migration that gave every store its identity (store_identity) and a merged store
// its sites (schemas/migrations/006_sites.sql, docs/sites.md).
constexpr int kSitesVersion = 6;

struct Migration {
  int version;
  std::string name;
  std::string sql;
};

// The numbered migrations in schemas/migrations (version 1 the baseline), compiled into
// the binary (migrations.cc); MigrateSchema applies them.
const std::vector<Migration>& Migrations();

// schemas/views.sql and schemas/legacy_upgrade.sql, compiled in (migrations.cc).
const std::string& ViewsSql();
const std::string& LegacyUpgradeSql();

// Brings the store on `db` to the newest schema version: a new store gets the baseline,
// a store from before it is converted to the baseline first, and then every numbered
// migration not yet applied runs, each in its own transaction. The baseline step also
// adds the declared columns (AddDeclaredColumns), so that they follow the baseline's
// columns in every store, however it was made. Foreign keys must be off: a conversion
// (and a migration that rebuilds a table) drops tables others refer to, as SQLite's
// procedure for changing a table's layout asks. `path` names the store in messages.
Status MigrateSchema(Database& db, const std::string& path);

// Adds to results, calibrations and result_ranks, at the end, a column for every field
// declared in schemas/result_fields.json that the table lacks, in declaration order.
// `log`: say so for each (a field declared since the store was made).
Status AddDeclaredColumns(Database& db, bool log);

// Drops each view schemas/views.sql creates and creates it again, result_summary with
// every declared result column. Views hold no data, so this runs at every start, after
// AddDeclaredColumns: a view may use any declared column.
Status RecreateViews(Database& db);

// The names of the views schemas/views.sql creates, in its order.
StatusOr<std::vector<std::string>> ViewNames();

// views.sql as it is run: result_summary's {result_columns} replaced by "r.n,
// r.median_ms, ..." for every declared result column, in declaration order.
StatusOr<std::string> ViewsSqlWithDeclaredColumns();

}  // namespace benchfleet
