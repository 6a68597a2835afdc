// ModelCache: the models an agent fetched from the coordinator by SHA-256, kept in its
// state directory for the next job that names them, and where the local files a job may
// name are allowed to be (schemas/sweep.md, Models by content).
//
// A copy is used only after its content was hashed again and is still its name: a
// cached file changed on disk (by a person, a bad disk, a half-written copy) is removed
// and fetched again, never run. The least recently used copies go once the cache holds
// more than its limit. Fetching goes a chunk at a time (Begin, Append..., Finish), so
// the agent keeps heartbeating while a large model arrives.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "common/model_transfer.h"
#include "common/sha256.h"
#include "common/status.h"

namespace benchfleet {

// How much of a cached model the agent hashes per pass of its loop (~0.1-0.2 s here).
inline constexpr int64_t kModelCheckSliceBytes = int64_t{32} << 20;

class ModelCache {
 public:
  // `directory` is created if needed; a `.part` left by an interrupted fetch is removed.
  static StatusOr<std::unique_ptr<ModelCache>> Open(const std::string& directory,
                                                    int64_t limit_bytes);

  // The path of a copy of `sha256` whose content checks, marked as just used; NotFound
  // when there is none (a copy whose content no longer matches is removed first, and
  // logged). Hashes the whole file at once: the agent's loop checks a slice at a time
  // (BeginCheck, StepCheck) instead.
  StatusOr<std::string> Lookup(const std::string& sha256);

  // Whether a copy of `sha256` is cached (its content not checked yet).
  bool Holds(const std::string& sha256) const;
  // Starts checking the cached copy of `sha256` (a check under way is dropped).
  void BeginCheck(const std::string& sha256);
  bool checking(const std::string& sha256) const { return check_ && check_->sha256 == sha256; }
  // Hashes up to `bytes` more of the copy being checked: nullopt while it is not done;
  // then what Lookup returns. At ~200-300 MiB/s (libsodium's SHA-256 on these hosts), a
  // slice of kModelCheckSliceBytes keeps the loop free within ~0.2 s.
  std::optional<StatusOr<std::string>> StepCheck(int64_t bytes);

  // Starts fetching `sha256` (an earlier fetch not finished is dropped).
  void Begin(const std::string& sha256);
  // Where the fetch under way stands: the offset of the next chunk to ask for.
  int64_t received() const { return fetch_ ? fetch_->received : 0; }
  bool fetching(const std::string& sha256) const { return fetch_ && fetch_->sha256 == sha256; }
  // Writes one chunk of the fetch under way. Done: the whole file is in, checked and
  // kept (then the path is returned). An error (a chunk out of order, another size, a
  // write that failed, content that is not `sha256`) drops the fetch.
  struct Progress {
    bool done = false;
    std::string path;
  };
  StatusOr<Progress> Append(const ModelChunkReply& chunk);

  const std::string& directory() const { return directory_; }

 private:
  ModelCache(std::string directory, int64_t limit_bytes)
      : directory_(std::move(directory)), limit_bytes_(limit_bytes) {}
  std::string PathOf(const std::string& sha256) const { return directory_ + "/" + sha256; }
  // Removes least recently used copies, never `keep`, until the cache fits its limit.
  void Evict(const std::string& keep);
  void Drop();

  struct Check {
    std::string sha256;
    std::unique_ptr<std::ifstream> in;
    Sha256 hash;
  };
  std::optional<Check> check_;
  // The end of a check: the path, or NotFound with the copy removed.
  StatusOr<std::string> Checked(const std::string& sha256, const std::string& got);
  struct Fetch {
    std::string sha256;
    Sha256 hash;
    int64_t size = -1;  // known with the first chunk
    int64_t received = 0;
  };
  const std::string directory_;
  const int64_t limit_bytes_;
  std::optional<Fetch> fetch_;
};

// The canonical path of `path` (symbolic links and `..` resolved) when it names a regular
// file inside `allowed_directory`; an error naming both otherwise, or when no directory
// is allowed (empty).
StatusOr<std::string> AllowedLocalModel(const std::string& path,
                                        const std::string& allowed_directory);

}  // namespace benchfleet
