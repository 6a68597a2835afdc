// Stores as the numbered steps before the baseline made them, for the tests of their
// conversion (sqlite/schema.h). The old steps' SQL is kept unchanged as test data,
// coordinator/testdata/legacy_migrations/001_init.sql ... 025_cpu_gpu_speedup_pairs.sql;
// the coordinator itself no longer has it.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

// The SQL of old step `version` (1 .. kLastLegacyVersion).
std::string LegacyStepSql(int version);

// Runs old steps from + 1 .. to on `db`, each in a transaction that sets user_version,
// as the coordinator of that time did. Step 005 calls benchfleet_pack_samples: `db`
// must have RegisterSampleFunctions.
Status ApplyLegacySteps(Database& db, int from, int to);

// Adds a column for every declared field, as the coordinator of that time did at each
// start (it is what sqlite/schema.h AddDeclaredColumns still does).
Status AddLegacyFieldColumns(Database& db);

// Creates at `path` a store at old version `version`, with incremental vacuum as the
// coordinator of that time set it, and returns a connection to it (sample functions
// registered, foreign keys off as they were while steps ran, commits not synced).
StatusOr<std::unique_ptr<Database>> CreateLegacyStore(const std::string& path, int version);

}  // namespace benchfleet
