#include "agent/model_cache.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/log.h"

namespace benchfleet {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPartSuffix = ".part";

}  // namespace

StatusOr<std::unique_ptr<ModelCache>> ModelCache::Open(const std::string& directory,
                                                       int64_t limit_bytes) {
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec) return Unavailable("cannot create the model cache " + directory + ": " + ec.message());
  for (const auto& entry : fs::directory_iterator(directory, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > std::strlen(kPartSuffix) &&
        name.substr(name.size() - std::strlen(kPartSuffix)) == kPartSuffix) {
      fs::remove(entry.path(), ec);
    }
  }
  if (ec) return Unavailable("cannot list the model cache " + directory + ": " + ec.message());
  return std::unique_ptr<ModelCache>(new ModelCache(directory, limit_bytes));
}

StatusOr<std::string> ModelCache::Lookup(const std::string& sha256) {
  if (!Holds(sha256)) return NotFound("model " + sha256 + " is not cached");
  BeginCheck(sha256);
  while (true) {
    auto done = StepCheck(kModelCheckSliceBytes);
    if (done) return std::move(*done);
  }
}

bool ModelCache::Holds(const std::string& sha256) const {
  std::error_code ec;
  return fs::is_regular_file(PathOf(sha256), ec);
}

void ModelCache::BeginCheck(const std::string& sha256) {
  check_.emplace();
  check_->sha256 = sha256;
  check_->in = std::make_unique<std::ifstream>(PathOf(sha256), std::ios::binary);
}

std::optional<StatusOr<std::string>> ModelCache::StepCheck(int64_t bytes) {
  if (!check_) return StatusOr<std::string>(FailedPrecondition("no check under way"));
  Check& check = *check_;
  std::vector<char> piece(1 << 20);
  for (int64_t read = 0; read < bytes && *check.in;) {
    check.in->read(piece.data(), static_cast<std::streamsize>(piece.size()));
    const std::streamsize got = check.in->gcount();
    if (got <= 0) break;
    check.hash.Update(piece.data(), static_cast<size_t>(got));
    read += got;
  }
  if (*check.in) return std::nullopt;  // more to read
  const std::string sha256 = check.sha256;
  const std::string got = check.in->bad() ? std::string("unreadable") : check.hash.FinalHex();
  check_.reset();
  return Checked(sha256, got);
}

StatusOr<std::string> ModelCache::Checked(const std::string& sha256, const std::string& got) {
  const std::string path = PathOf(sha256);
  std::error_code ec;
  if (got != sha256) {
    LOG_WARN("cached model " << path << " no longer has the content it is named by (its sha256 is "
                             << got << "); removed, to be fetched again");
    fs::remove(path, ec);
    return NotFound("model " + sha256 + " is not cached");
  }
  // The least recently used go first: a use makes it the newest.
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
  return path;
}

void ModelCache::Drop() {
  if (!fetch_) return;
  std::error_code ec;
  fs::remove(PathOf(fetch_->sha256) + kPartSuffix, ec);
  fetch_.reset();
}

void ModelCache::Begin(const std::string& sha256) {
  Drop();
  fetch_.emplace();
  fetch_->sha256 = sha256;
  std::ofstream(PathOf(sha256) + kPartSuffix, std::ios::binary | std::ios::trunc);
}

StatusOr<ModelCache::Progress> ModelCache::Append(const ModelChunkReply& chunk) {
  if (!fetch_ || chunk.sha256 != fetch_->sha256)
    return FailedPrecondition("no fetch of model " + chunk.sha256 + " is under way");
  Fetch& fetch = *fetch_;
  auto fail = [&](Status status) {
    Drop();
    return status;
  };
  if (chunk.error) return fail(NotFound(*chunk.error));
  if (chunk.offset != fetch.received) {
    return fail(FailedPrecondition("model " + fetch.sha256 + ": a chunk at " +
                                   std::to_string(chunk.offset) + " came where " +
                                   std::to_string(fetch.received) + " was asked for"));
  }
  if (fetch.size >= 0 && chunk.size != fetch.size) {
    return fail(FailedPrecondition("model " + fetch.sha256 + " changed size while it was fetched"));
  }
  fetch.size = chunk.size;
  if (chunk.data.empty() && fetch.received < fetch.size) {
    return fail(FailedPrecondition("model " + fetch.sha256 + ": an empty chunk before the end"));
  }
  const std::string part = PathOf(fetch.sha256) + kPartSuffix;
  {
    std::ofstream out(part, std::ios::binary | std::ios::app);
    out.write(chunk.data.data(), static_cast<std::streamsize>(chunk.data.size()));
    out.flush();
    if (!out)
      return fail(
          Unavailable("cannot write " + part + " (is the disk full?): " + std::strerror(errno)));
  }
  fetch.hash.Update(chunk.data);
  fetch.received += static_cast<int64_t>(chunk.data.size());
  if (fetch.received < fetch.size) return Progress{};
  const std::string got = fetch.hash.FinalHex();
  if (got != fetch.sha256) {
    return fail(
        FailedPrecondition("model " + fetch.sha256 + " arrived with sha256 " + got + "; not kept"));
  }
  std::error_code ec;
  const std::string sha256 = fetch.sha256;
  const int64_t size = fetch.size;
  fs::rename(part, PathOf(sha256), ec);
  if (ec) return fail(Unavailable("cannot keep " + PathOf(sha256) + ": " + ec.message()));
  fetch_.reset();
  LOG_INFO("model " << sha256 << " fetched and checked (" << size << " bytes)");
  Evict(sha256);
  return Progress{true, PathOf(sha256)};
}

void ModelCache::Evict(const std::string& keep) {
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    int64_t size;
  };
  std::vector<Entry> entries;
  int64_t total = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(directory_, ec)) {
    if (!entry.is_regular_file(ec) || !IsSha256Hex(entry.path().filename().string())) continue;
    const int64_t size = static_cast<int64_t>(entry.file_size(ec));
    total += size;
    if (entry.path().filename() == keep) continue;
    entries.push_back({entry.path(), entry.last_write_time(ec), size});
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& entry : entries) {
    if (total <= limit_bytes_) break;
    fs::remove(entry.path, ec);
    total -= entry.size;
    LOG_INFO("model cache over " << limit_bytes_ << " bytes: removed the least recently used "
                                 << entry.path.string());
  }
}

StatusOr<std::string> AllowedLocalModel(const std::string& path,
                                        const std::string& allowed_directory) {
  if (allowed_directory.empty()) {
    return PermissionDenied(
        "model_args.agent_path: " + path +
        " is a file on this agent's host, and this agent allows none (start it with "
        "--models-dir DIR to allow the files under DIR)");
  }
  std::error_code ec;
  const fs::path root = fs::canonical(allowed_directory, ec);
  if (ec) return FailedPrecondition("--models-dir " + allowed_directory + ": " + ec.message());
  const fs::path file = fs::canonical(path, ec);
  if (ec) return NotFound("model_args.agent_path: " + path + ": " + ec.message());
  const auto [end, _] = std::mismatch(root.begin(), root.end(), file.begin(), file.end());
  if (end != root.end()) {
    return PermissionDenied("model_args.agent_path: " + path +
                            " is not under this agent's --models-dir " + root.string());
  }
  if (!fs::is_regular_file(file, ec))
    return InvalidArgument("model_args.agent_path: " + path + " is not a regular file");
  return file.string();
}

}  // namespace benchfleet
