// ModelStore: users' TorchScript files, kept by the coordinator under their SHA-256
// (schemas/protocol.md, model_upload and model_fetch). The CLI uploads a file in
// chunks; the store hashes it as it arrives and keeps it only when its content is the
// hash it was announced as, so a job naming a hash names exactly those bytes. Agents
// read it back a chunk at a time.
//
// One directory: `<sha256>` for each stored file, `<sha256>.part` for an upload under
// way. Everything runs on the coordinator's loop, a chunk (kModelChunkBytes) at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "common/aoti_package.h"
#include "common/clock.h"
#include "common/model_transfer.h"
#include "common/sha256.h"
#include "common/status.h"

namespace benchfleet {

// Uploads under way at once; one more drops the one left alone longest (its client can
// start it over: the reply tells it where).
inline constexpr size_t kMaxModelUploads = 8;

class ModelStore {
 public:
  // Creates `directory` if needed and lists what it holds. Leftover `.part` files are
  // removed: the hash of their first bytes died with the process that received them.
  static StatusOr<std::unique_ptr<ModelStore>> Open(const std::string& directory);

  // Whether the whole file of `sha256` is stored (and was checked when it arrived).
  bool Has(const std::string& sha256) const { return stored_.count(sha256) > 0; }

  // Takes one chunk of an upload and says where it stands. A chunk at another offset
  // than the one expected is not written (the reply names the expected one); the last
  // one finishes the file: kept if its SHA-256 is `sha256`, else dropped and
  // InvalidArgument. A failed write is Unavailable and keeps nothing of the chunk.
  StatusOr<ModelStoredReply> Accept(const ModelUploadRequest& chunk, MonoTime now);

  // Up to kModelChunkBytes of a stored file from `offset`; `error` set when the file is
  // not stored or cannot be read.
  ModelChunkReply Read(const ModelFetchRequest& fetch) const;

  // What the stored AOTInductor package `sha256` was compiled for (ReadAotiPackage: its
  // device and torch), read once per package (a stored file never changes): NotFound
  // when it is not stored, InvalidArgument when it is no package.
  StatusOr<AotiPackageFacts> PackageFacts(const std::string& sha256);

  const std::string& directory() const { return directory_; }

 private:
  explicit ModelStore(std::string directory) : directory_(std::move(directory)) {}
  std::string PathOf(const std::string& sha256) const { return directory_ + "/" + sha256; }
  StatusOr<ModelStoredReply> Finish(const ModelUploadRequest& chunk);
  void DropUpload(const std::string& sha256);

  struct Upload {
    Sha256 hash;  // of the bytes received so far, in order
    int64_t size = 0;
    int64_t received = 0;
    MonoTime touched;
  };
  const std::string directory_;
  std::set<std::string> stored_;
  std::map<std::string, Upload> uploads_;             // by sha256
  std::map<std::string, AotiPackageFacts> packages_;  // by sha256, once read
};

}  // namespace benchfleet
