#include "coordinator/store/model_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/log.h"

namespace benchfleet {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPartSuffix = ".part";

std::string Errno() { return std::strerror(errno); }

// Appends `data` to `path` and flushes it to the file; on a short write the file is cut
// back to `keep` bytes, so a failed chunk leaves nothing behind.
Status AppendChunk(const std::string& path, int64_t keep, const std::string& data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Unavailable("cannot open " + path + ": " + Errno());
  Status status;
  if (::ftruncate(fd, keep) != 0 || ::lseek(fd, keep, SEEK_SET) != keep) {
    status = Unavailable("cannot write " + path + ": " + Errno());
  }
  size_t written = 0;
  while (status.ok() && written < data.size()) {
    const ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      status = Unavailable("cannot write " + path + " (is the disk full?): " + Errno());
      (void)::ftruncate(fd, keep);
      break;
    }
    written += static_cast<size_t>(n);
  }
  ::close(fd);
  return status;
}

Status SyncFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Unavailable("cannot open " + path + ": " + Errno());
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : Unavailable("cannot flush " + path + ": " + Errno());
}

}  // namespace

StatusOr<std::unique_ptr<ModelStore>> ModelStore::Open(const std::string& directory) {
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec)
    return Unavailable("cannot create the model directory " + directory + ": " + ec.message());
  std::unique_ptr<ModelStore> store(new ModelStore(directory));
  for (const auto& entry : fs::directory_iterator(directory, ec)) {
    const std::string name = entry.path().filename().string();
    if (IsSha256Hex(name) && entry.is_regular_file()) {
      store->stored_.insert(name);
    } else if (name.size() == 64 + std::strlen(kPartSuffix) && IsSha256Hex(name.substr(0, 64)) &&
               name.substr(64) == kPartSuffix) {
      fs::remove(entry.path(), ec);
    }
  }
  if (ec) return Unavailable("cannot list the model directory " + directory + ": " + ec.message());
  LOG_INFO("model store " << directory << ": " << store->stored_.size() << " models");
  return store;
}

void ModelStore::DropUpload(const std::string& sha256) {
  uploads_.erase(sha256);
  std::error_code ec;
  fs::remove(PathOf(sha256) + kPartSuffix, ec);
}

StatusOr<ModelStoredReply> ModelStore::Accept(const ModelUploadRequest& chunk, MonoTime now) {
  ModelStoredReply reply;
  reply.sha256 = chunk.sha256;
  reply.size = chunk.size;
  if (Has(chunk.sha256)) {
    reply.next_offset = chunk.size;
    reply.stored = true;
    return reply;
  }
  auto it = uploads_.find(chunk.sha256);
  if (it != uploads_.end() && it->second.size != chunk.size) {
    // Another size for the same hash: one of the two is wrong; start over with this one.
    DropUpload(chunk.sha256);
    it = uploads_.end();
  }
  if (it == uploads_.end()) {
    if (chunk.offset != 0) {
      reply.next_offset = 0;  // nothing held: from the start
      return reply;
    }
    if (uploads_.size() >= kMaxModelUploads) {
      auto oldest = std::min_element(
          uploads_.begin(), uploads_.end(),
          [](const auto& a, const auto& b) { return a.second.touched < b.second.touched; });
      LOG_WARN("model upload " << oldest->first << " dropped for a newer one (" << kMaxModelUploads
                               << " at once at most)");
      DropUpload(oldest->first);
    }
    Upload upload;
    upload.size = chunk.size;
    it = uploads_.emplace(chunk.sha256, std::move(upload)).first;
  }
  Upload& upload = it->second;
  upload.touched = now;
  reply.next_offset = upload.received;
  // Not where this upload stands (a resend, or a client that lost count), or a question
  // only: where to go on is the answer. (A finished upload is stored, never here.)
  if (chunk.offset != upload.received || chunk.data.empty()) return reply;
  Status written = AppendChunk(PathOf(chunk.sha256) + kPartSuffix, upload.received, chunk.data);
  if (!written.ok()) return written;
  upload.hash.Update(chunk.data);
  upload.received += static_cast<int64_t>(chunk.data.size());
  reply.next_offset = upload.received;
  if (upload.received < upload.size) return reply;
  return Finish(chunk);
}

StatusOr<ModelStoredReply> ModelStore::Finish(const ModelUploadRequest& chunk) {
  Upload& upload = uploads_.at(chunk.sha256);
  const std::string got = upload.hash.FinalHex();
  const std::string part = PathOf(chunk.sha256) + kPartSuffix;
  if (got != chunk.sha256) {
    DropUpload(chunk.sha256);
    return InvalidArgument("model_upload: the uploaded bytes have sha256 " + got + ", not " +
                           chunk.sha256 + "; nothing was kept");
  }
  Status synced = SyncFile(part);
  if (synced.ok() && ::rename(part.c_str(), PathOf(chunk.sha256).c_str()) != 0) {
    synced = Unavailable("cannot keep " + PathOf(chunk.sha256) + ": " + Errno());
  }
  if (!synced.ok()) {
    DropUpload(chunk.sha256);
    return synced;
  }
  uploads_.erase(chunk.sha256);
  stored_.insert(chunk.sha256);
  LOG_INFO("model " << chunk.sha256 << " stored (" << chunk.size << " bytes)");
  ModelStoredReply reply;
  reply.sha256 = chunk.sha256;
  reply.size = chunk.size;
  reply.next_offset = chunk.size;
  reply.stored = true;
  return reply;
}

ModelChunkReply ModelStore::Read(const ModelFetchRequest& fetch) const {
  ModelChunkReply out;
  out.sha256 = fetch.sha256;
  out.offset = fetch.offset;
  if (!Has(fetch.sha256)) {
    out.error = "no model with sha256 " + fetch.sha256 + " is stored on the coordinator";
    return out;
  }
  std::ifstream in(PathOf(fetch.sha256), std::ios::binary | std::ios::ate);
  if (!in) {
    out.error = "the coordinator cannot read its copy of model " + fetch.sha256 + ": " + Errno();
    return out;
  }
  out.size = static_cast<int64_t>(in.tellg());
  if (fetch.offset > out.size) {
    out.error = "offset " + std::to_string(fetch.offset) + " is past the model's size " +
                std::to_string(out.size);
    return out;
  }
  out.data.resize(
      static_cast<size_t>(std::min<int64_t>(kModelChunkBytes, out.size - fetch.offset)));
  in.seekg(fetch.offset);
  in.read(out.data.data(), static_cast<std::streamsize>(out.data.size()));
  if (in.gcount() != static_cast<std::streamsize>(out.data.size())) {
    out.error = "the coordinator cannot read its copy of model " + fetch.sha256;
    out.data.clear();
  }
  return out;
}

StatusOr<AotiPackageFacts> ModelStore::PackageFacts(const std::string& sha256) {
  if (auto it = packages_.find(sha256); it != packages_.end()) return it->second;
  if (!Has(sha256)) return NotFound("no model of sha256 " + sha256 + " is stored; upload it first");
  ASSIGN_OR_RETURN(AotiPackageFacts facts, ReadAotiPackage(PathOf(sha256)));
  packages_[sha256] = facts;
  return facts;
}

}  // namespace benchfleet
