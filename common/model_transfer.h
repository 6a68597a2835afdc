// Users' model files on the wire (schemas/protocol.md, "Models by content"): the CLI
// uploads a file in chunks (`model_upload`, answered by `model_stored`) and the
// coordinator keeps it under its SHA-256; an agent fetches one by that hash in chunks
// (`model_fetch`, answered by `model_chunk`). Bytes travel as base64 in the JSON
// message; each side parses a message once, here, into its struct.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/limits.h"
#include "common/protocol.h"
#include "common/status.h"

namespace benchfleet {

// `model_upload` (client -> coordinator): the bytes of `sha256` from `offset`. The whole
// file is `size` bytes; an upload with no data asks only where to go on (already
// stored, or how much of an interrupted upload the coordinator holds).
struct ModelUploadRequest {
  static constexpr const char* kType = msg::kModelUpload;
  std::string sha256;
  int64_t size = 0;
  int64_t offset = 0;
  std::string data;               // raw bytes, at most kModelChunkBytes
  nlohmann::json ToJson() const;  // the fields; the client adds type and request_id
};
StatusOr<ModelUploadRequest> ParseModelUpload(const Message& message);

// `model_stored` (coordinator -> client): where the upload stands. `stored`: the whole
// file is kept and its hash checked; otherwise the client sends from `next_offset`.
struct ModelStoredReply {
  static constexpr const char* kType = msg::kModelStored;
  nlohmann::json request_id;
  std::string sha256;
  int64_t size = 0;
  int64_t next_offset = 0;
  bool stored = false;
  nlohmann::json ToJson() const;
  static StatusOr<ModelStoredReply> FromJson(const nlohmann::json& body);
};

// `model_fetch` (agent -> coordinator): up to kModelChunkBytes of `sha256` from `offset`.
struct ModelFetchRequest {
  static constexpr const char* kType = msg::kModelFetch;
  std::string sha256;
  int64_t offset = 0;
  nlohmann::json ToJson() const;
  static StatusOr<ModelFetchRequest> FromJson(const nlohmann::json& body);
};

// `model_chunk` (coordinator -> agent): the bytes of `sha256` from `offset`, of a file of
// `size` bytes; or `error` (no such model, unreadable) and no data.
struct ModelChunkReply {
  static constexpr const char* kType = msg::kModelChunk;
  std::string sha256;
  int64_t offset = 0;
  int64_t size = 0;
  std::string data;
  std::optional<std::string> error;
  nlohmann::json ToJson() const;
  static StatusOr<ModelChunkReply> FromJson(const nlohmann::json& body);
};

}  // namespace benchfleet
