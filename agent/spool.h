// SpoolDirectory: results waiting for the coordinator's acknowledgement, one file each,
// written and fsynced before the result is first sent and removed only after the ack.
// A result survives an unreachable coordinator and an agent restart.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

struct SpooledResult {
  int64_t job_id;
  int attempt;
  nlohmann::json result;
};

class SpoolDirectory {
 public:
  explicit SpoolDirectory(std::string path) : path_(std::move(path)) {}

  // Creates the directory (and parents) if needed.
  Status Open();
  // Durably stores the result of (job_id, attempt): temp file, fsync, rename, fsync dir.
  Status Put(const SpooledResult& entry);
  // Every spooled result, oldest job first. Unreadable files are reported and skipped
  // (moved aside with a ".bad" suffix so they are not retried forever).
  std::vector<SpooledResult> List();
  // Forgets (job_id, attempt); not an error if it was already gone.
  Status Remove(int64_t job_id, int attempt);
  const std::string& path() const { return path_; }

 private:
  std::string FileName(int64_t job_id, int attempt) const;
  std::string path_;
};

}  // namespace benchfleet
