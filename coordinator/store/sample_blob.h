// Raw samples as the store keeps them: one BLOB per result, each sample a float32 in
// little-endian byte order, in the order taken (docs/results.md, Raw samples). About
// 4 bytes a sample instead of ~25 for a row of (job_id, idx, ms); float32 keeps ~7
// significant digits, far finer than a timing's own noise. The `samples` view
// (schemas/views.sql) unpacks them in plain SQL.
#pragma once

#include <sqlite3.h>

#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

std::string PackSamples(const std::vector<double>& samples_ms);
// The inverse; a BLOB whose size is not a multiple of 4 is refused.
StatusOr<std::vector<double>> UnpackSamples(const std::string& blob);

// Registers benchfleet_pack_samples(idx, ms), an aggregate that packs the rows of one
// result into its BLOB, placing each sample at its idx. Converting a store from before
// the baseline uses it to move the old one-row-per-sample table
// (schemas/legacy_upgrade.sql); the store's own writes use PackSamples.
Status RegisterSampleFunctions(sqlite3* db);

}  // namespace benchfleet
