// SpoolDirectory: results waiting for the coordinator's acknowledgement, one file each,
// written and fsynced before the result is first sent and removed only after the ack.
// A result survives an unreachable coordinator and an agent restart.
//
// The directory is read once, by Open(); from then on the spool's index and results live
// in memory and Put/Remove keep both in step, so resending unacknowledged results (every
// couple of seconds) never reads or parses a file. Not thread-safe: the agent's loop owns it.
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

  // Creates the directory (and parents) if needed and loads what an earlier agent left:
  // every readable result; an unreadable file is reported and moved aside with a ".bad"
  // suffix (so it is not retried forever); a temp file of an interrupted Put is removed.
  Status Open();
  // Durably stores the result of (job_id, attempt): temp file, fsync, rename, fsync dir;
  // then it is listed. On error it is still listed (and so resent while this process
  // lives), but would not survive a restart.
  Status Put(const SpooledResult& entry);
  // Every spooled result, oldest job first. From memory: no disk access.
  const std::vector<SpooledResult>& List() const { return entries_; }
  size_t size() const { return entries_.size(); }
  // Forgets (job_id, attempt); not an error if it was already gone. It leaves the list
  // even when its file cannot be removed (the error says so): it was acknowledged.
  Status Remove(int64_t job_id, int attempt);
  const std::string& path() const { return path_; }

 private:
  std::string FileName(int64_t job_id, int attempt) const;
  Status Write(const SpooledResult& entry) const;
  // Inserts or replaces `entry`, keeping entries_ sorted by (job_id, attempt).
  void Index(SpooledResult entry);

  std::string path_;
  std::vector<SpooledResult> entries_;  // sorted by (job_id, attempt)
};

}  // namespace benchfleet
