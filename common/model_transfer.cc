#include "common/model_transfer.h"

#include "common/json_read.h"
#include "common/sha256.h"

namespace benchfleet {
namespace {

using nlohmann::json;

constexpr IntegerRange kModelSize{1, kMaxModelBytes};
constexpr IntegerRange kModelOffset{0, kMaxModelBytes};
// A model_chunk's error text: a sentence, not a file.
constexpr size_t kMaxChunkErrorLength = 1024;

StatusOr<std::string> ReadSha256(const json& body, const std::string& where) {
  ASSIGN_OR_RETURN(std::string sha256, ReadText(body, where, "sha256", 64));
  if (!IsSha256Hex(sha256)) {
    return InvalidArgument(where + ".sha256: must be 64 lowercase hex digits, got " +
                           ShownValue(body["sha256"]));
  }
  return sha256;
}

// `data` as raw bytes: base64 of at most kModelChunkBytes.
StatusOr<std::string> ReadData(const json& body, const std::string& where) {
  constexpr size_t kMaxBase64 = (kModelChunkBytes + 2) / 3 * 4;
  ASSIGN_OR_RETURN(std::string text, ReadText(body, where, "data", kMaxBase64));
  auto bytes = Base64Decode(text);
  if (!bytes.ok())
    return InvalidArgument(where + ".data: must be base64, got " + ShownValue(body["data"]));
  return std::move(*bytes);
}

}  // namespace

json ModelUploadRequest::ToJson() const {
  return {{"sha256", sha256}, {"size", size}, {"offset", offset}, {"data", Base64Encode(data)}};
}

StatusOr<ModelUploadRequest> ParseModelUpload(const Message& message) {
  const json& body = message.body;
  const std::string where = msg::kModelUpload;
  ModelUploadRequest out;
  ASSIGN_OR_RETURN(out.sha256, ReadSha256(body, where));
  ASSIGN_OR_RETURN(out.size, ReadInteger(body, where, "size", kModelSize));
  ASSIGN_OR_RETURN(out.offset, ReadInteger(body, where, "offset", kModelOffset));
  ASSIGN_OR_RETURN(out.data, ReadData(body, where));
  if (out.offset + static_cast<int64_t>(out.data.size()) > out.size) {
    return InvalidArgument(where + ".data: " + std::to_string(out.data.size()) +
                           " bytes at offset " + std::to_string(out.offset) +
                           " run past the file's size " + std::to_string(out.size));
  }
  return out;
}

json ModelStoredReply::ToJson() const {
  return MakeMessage(kType, {{"request_id", request_id},
                             {"sha256", sha256},
                             {"size", size},
                             {"next_offset", next_offset},
                             {"stored", stored}})
      .body;
}

StatusOr<ModelStoredReply> ModelStoredReply::FromJson(const json& body) {
  const std::string where = msg::kModelStored;
  ModelStoredReply out;
  out.request_id = body.value("request_id", json());
  ASSIGN_OR_RETURN(out.sha256, ReadSha256(body, where));
  ASSIGN_OR_RETURN(out.size, ReadInteger(body, where, "size", kModelSize));
  ASSIGN_OR_RETURN(out.next_offset,
                   ReadInteger(body, where, "next_offset", IntegerRange{0, out.size}));
  ASSIGN_OR_RETURN(out.stored, ReadFlag(body, where, "stored"));
  return out;
}

json ModelFetchRequest::ToJson() const {
  return MakeMessage(kType, {{"sha256", sha256}, {"offset", offset}}).body;
}

StatusOr<ModelFetchRequest> ModelFetchRequest::FromJson(const json& body) {
  const std::string where = msg::kModelFetch;
  ModelFetchRequest out;
  ASSIGN_OR_RETURN(out.sha256, ReadSha256(body, where));
  ASSIGN_OR_RETURN(out.offset, ReadInteger(body, where, "offset", kModelOffset));
  return out;
}

json ModelChunkReply::ToJson() const {
  json body = MakeMessage(kType, {{"sha256", sha256}, {"offset", offset}, {"size", size}}).body;
  if (error) {
    body["error"] = *error;
    body["data"] = "";
  } else {
    body["data"] = Base64Encode(data);
  }
  return body;
}

StatusOr<ModelChunkReply> ModelChunkReply::FromJson(const json& body) {
  const std::string where = msg::kModelChunk;
  ModelChunkReply out;
  ASSIGN_OR_RETURN(out.sha256, ReadSha256(body, where));
  ASSIGN_OR_RETURN(out.error, ReadOptionalText(body, where, "error", kMaxChunkErrorLength));
  ASSIGN_OR_RETURN(out.offset, ReadInteger(body, where, "offset", kModelOffset));
  if (out.error) return out;
  ASSIGN_OR_RETURN(out.size, ReadInteger(body, where, "size", kModelSize));
  ASSIGN_OR_RETURN(out.data, ReadData(body, where));
  if (out.offset + static_cast<int64_t>(out.data.size()) > out.size) {
    return InvalidArgument(where + ".data: runs past the file's size " + std::to_string(out.size));
  }
  return out;
}

}  // namespace benchfleet
