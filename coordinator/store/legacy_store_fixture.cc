#include "coordinator/store/legacy_store_fixture.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/test_paths.h"
#include "coordinator/store/sample_blob.h"
#include "sqlite/schema.h"

namespace benchfleet {

std::string LegacyStepSql(int version) {
  char prefix[8];
  std::snprintf(prefix, sizeof(prefix), "%03d_", version);
  for (const auto& entry : std::filesystem::directory_iterator(
           std::string(test_paths::kSourceDir) + "/coordinator/store/testdata/legacy_migrations")) {
    if (entry.path().filename().string().rfind(prefix, 0) != 0) continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  return "";
}

Status ApplyLegacySteps(Database& db, int from, int to) {
  for (int version = from + 1; version <= to; ++version) {
    const std::string sql = LegacyStepSql(version);
    if (sql.empty()) return NotFound("no old step " + std::to_string(version));
    Transaction tx(db);
    RETURN_IF_ERROR(tx.Begin());
    Status applied = db.Exec(sql);
    if (!applied.ok())
      return Internal("old step " + std::to_string(version) + ": " + applied.message());
    RETURN_IF_ERROR(db.Exec("PRAGMA user_version = " + std::to_string(version)));
    RETURN_IF_ERROR(tx.Commit());
  }
  return Status::Ok();
}

Status AddLegacyFieldColumns(Database& db) {
  Transaction tx(db);
  RETURN_IF_ERROR(tx.Begin());
  RETURN_IF_ERROR(AddDeclaredColumns(db, /*log=*/false));
  return tx.Commit();
}

StatusOr<std::unique_ptr<Database>> CreateLegacyStore(const std::string& path, int version) {
  ASSIGN_OR_RETURN(auto db, Database::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  RETURN_IF_ERROR(RegisterSampleFunctions(db->handle()));
  // A fixture's commits need not survive a power cut: no sync.
  RETURN_IF_ERROR(db->Exec("PRAGMA auto_vacuum=INCREMENTAL; PRAGMA synchronous=OFF"));
  RETURN_IF_ERROR(ApplyLegacySteps(*db, 0, version));
  return db;
}

}  // namespace benchfleet
