// What `benchfleet submit` and `schedule add` do with the TorchScript files a sweep file
// names by `path` (schemas/sweep.md, Models by content): hash each, upload it to the
// coordinator in chunks (model_upload) unless it is stored already, and send the sweep
// naming each by its sha256, so that every agent runs the same bytes and the series
// follows the content, not the path.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/client.h"
#include "common/status.h"

namespace benchfleet {

// Uploads every file `sweep` (a sweep document, its relative paths already resolved)
// names by `path` and rewrites those to `sha256`. Progress goes to `progress` (a line
// per file). An unreadable file, one over kMaxModelBytes, or a refused upload is an
// error naming the file; nothing is rewritten then.
Status UploadModels(CoordinatorClient& client, nlohmann::json* sweep, std::ostream& progress);

}  // namespace benchfleet
