// Whole files in and out: the one way benchfleet reads a file or a JSON document from
// disk, and the one way it replaces a file so that no reader, and no crash, ever sees
// half of it. Linked by every program, the worker included (benchfleet::common_core).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace benchfleet {

// The whole file. NotFound when it does not exist; Unavailable when it cannot be read
// (permissions, I/O), with the system's reason.
[[nodiscard]] StatusOr<std::string> ReadWholeFile(const std::string& path);

// `text` as JSON. InvalidArgument naming `what` (e.g. "job file /x/job.json") and the
// parser's position when it is not JSON. Never throws.
[[nodiscard]] StatusOr<nlohmann::json> ParseJson(const std::string& text, const std::string& what);

// ReadWholeFile, then ParseJson with the file's path as `what`.
[[nodiscard]] StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);

// Replaces `path` with `content` durably: written to a temporary file beside it (its
// name marked by kUnfinishedWriteMarker), fsynced, renamed over `path`, and the
// directory fsynced so that the rename itself survives a crash. Readers see the old
// file or the new one, never a part. On failure the temporary file is removed and
// `path` is untouched. Unavailable with the system's reason.
[[nodiscard]] Status WriteFileAtomically(const std::string& path, const std::string& content);

// Marks the temporary file of a WriteFileAtomically that had not finished (a crash
// between its write and its rename): "<name>.tmp-<pid>".
inline constexpr const char* kUnfinishedWriteMarker = ".tmp-";
// Whether `file_name` is such a leftover of a write to a file whose name ends with
// `suffix` (a directory's owner removes them when it opens it).
bool IsUnfinishedWrite(const std::string& file_name, const std::string& suffix);

}  // namespace benchfleet
