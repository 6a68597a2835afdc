// The model files a sweep names (schemas/sweep.md, Models by content): in
// `models.torchscript` and `models.aoti` (one or, as an argument axis, several) and in
// TorchScript `reference` values (the matrix' and exclude's). The CLI uploads each file named by
// `path` and names it by `sha256` instead; the coordinator refuses a sweep that still
// names a file on the submitting machine, or content it does not hold.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

// How a sweep names one model file (a TorchScript file or an AOTInductor package).
struct ModelFileRef {
  std::string field;  // the sweep field: "models.torchscript.path[1]",
                      // "matrix.reference[0].model_args.sha256"
  std::string key;    // "path", "sha256" or "agent_path"
  std::string value;  // the path or the hash, as written
};

// Every TorchScript file `sweep` (a sweep document) names, in document order. Values
// that are not strings are left to the sweep's own validation and not listed.
std::vector<ModelFileRef> FindModelFiles(const nlohmann::json& sweep);

// Rewrites `sweep` so that each `path` value P is named by its content: the key becomes
// `sha256` with value sha256_of.at(P) (an axis of paths becomes an axis of hashes, in the
// same order). Every path must be in `sha256_of`.
Status NameModelsByContent(nlohmann::json* sweep,
                           const std::map<std::string, std::string>& sha256_of);

// Rewrites each relative `path` value to `directory`/value (how a sweep file names a
// model beside it).
void ResolveModelPaths(nlohmann::json* sweep, const std::string& directory);

// What the coordinator checks of a submitted sweep's files: none named by `path` (a file
// only the submitter has; `benchfleet submit` uploads them), and every `sha256` one it
// holds (`is_stored`). The error names the sweep field.
Status CheckSubmittedModels(const nlohmann::json& sweep,
                            const std::function<bool(const std::string&)>& is_stored);

}  // namespace benchfleet
