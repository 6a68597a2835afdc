#include "cli/model_upload.h"

#include <fstream>
#include <map>
#include <ostream>

#include "common/limits.h"
#include "common/model_files.h"
#include "common/model_transfer.h"
#include "common/sha256.h"

namespace benchfleet {
namespace {

std::string Mebibytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

// Sends `path` (of `digest`) from wherever the coordinator's copy ends.
Status UploadFile(CoordinatorClient& client, const std::string& path, const FileDigest& digest,
                  std::ostream& progress) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read model file " + path);
  ModelUploadRequest request;
  request.sha256 = digest.sha256;
  request.size = digest.size;
  request.offset = 0;  // no data: where to go on
  int64_t sent = 0;
  while (true) {
    auto reply = client.Call(msg::kModelUpload, request.ToJson());
    if (!reply.ok()) return Status(reply.status().code(), path + ": " + reply.status().message());
    auto stored = ModelStoredReply::FromJson(reply->body);
    if (!stored.ok()) return stored.status();
    if (stored->stored) {
      progress << "model " << path << ": " << (sent == 0 ? "already stored" : "uploaded")
               << ", sha256 " << digest.sha256 << " (" << Mebibytes(digest.size) << ")\n";
      return Status::Ok();
    }
    request.offset = stored->next_offset;
    request.data.assign(
        static_cast<size_t>(std::min(kModelChunkBytes, digest.size - request.offset)), '\0');
    in.clear();
    in.seekg(request.offset);
    in.read(request.data.data(), static_cast<std::streamsize>(request.data.size()));
    if (in.gcount() != static_cast<std::streamsize>(request.data.size())) {
      return FailedPrecondition("model file " + path +
                                " changed while it was uploaded; submit again");
    }
    sent += static_cast<int64_t>(request.data.size());
  }
}

}  // namespace

Status UploadModels(CoordinatorClient& client, nlohmann::json* sweep, std::ostream& progress) {
  std::map<std::string, std::string> sha256_of;
  for (const ModelFileRef& ref : FindModelFiles(*sweep)) {
    if (ref.key != "path" || sha256_of.count(ref.value) > 0) continue;
    auto digest = Sha256OfFile(ref.value);
    if (!digest.ok()) return InvalidArgument(ref.field + ": " + digest.status().message());
    if (digest->size == 0 || digest->size > kMaxModelBytes) {
      return InvalidArgument(ref.field + ": " + ref.value + " is " + std::to_string(digest->size) +
                             " bytes; a model file is 1 byte to " + std::to_string(kMaxModelBytes) +
                             " bytes");
    }
    RETURN_IF_ERROR(UploadFile(client, ref.value, *digest, progress));
    sha256_of[ref.value] = digest->sha256;
  }
  if (sha256_of.empty()) return Status::Ok();
  return NameModelsByContent(sweep, sha256_of);
}

}  // namespace benchfleet
