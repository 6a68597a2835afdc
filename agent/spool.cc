#include "agent/spool.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "common/files.h"
#include "common/log.h"

namespace fs = std::filesystem;

namespace benchfleet {
namespace {

constexpr const char* kSuffix = ".result.json";

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() > suffix.size() &&
         text.compare(text.size() - suffix.size(), std::string::npos, suffix) == 0;
}

bool EarlierJob(const SpooledResult& a, const SpooledResult& b) {
  return std::tie(a.job_id, a.attempt) < std::tie(b.job_id, b.attempt);
}

}  // namespace

Status SpoolDirectory::Open() {
  std::error_code ec;
  fs::create_directories(path_, ec);
  if (ec) return Unavailable("cannot create spool directory " + path_ + ": " + ec.message());
  entries_.clear();
  fs::directory_iterator files(path_, ec);
  if (ec) return Unavailable("cannot read spool directory " + path_ + ": " + ec.message());
  for (const auto& file : files) {
    const std::string name = file.path().filename().string();
    if (IsUnfinishedWrite(name, kSuffix)) {
      // A Put interrupted before its rename: that result was never sent, and its job's
      // lease runs out at the coordinator, which hands the job out again.
      fs::remove(file.path(), ec);
      continue;
    }
    if (!EndsWith(name, kSuffix)) continue;
    auto read = ReadJsonFile(file.path().string());
    nlohmann::json doc = read.ok() ? std::move(read).value() : nlohmann::json();
    if (!doc.is_object() || !doc.value("job_id", nlohmann::json()).is_number_integer() ||
        !doc.value("attempt", nlohmann::json()).is_number_integer() || !doc.contains("result")) {
      LOG_ERROR("spooled result " << file.path().string() << " is unreadable; moved aside");
      fs::rename(file.path(), file.path().string() + ".bad", ec);
      continue;
    }
    Index({doc["job_id"].get<int64_t>(), doc["attempt"].get<int>(), std::move(doc["result"])});
  }
  return Status::Ok();
}

std::string SpoolDirectory::FileName(int64_t job_id, int attempt) const {
  return path_ + "/job-" + std::to_string(job_id) + "-" + std::to_string(attempt) + kSuffix;
}

void SpoolDirectory::Index(SpooledResult entry) {
  auto at = std::lower_bound(entries_.begin(), entries_.end(), entry, EarlierJob);
  if (at != entries_.end() && at->job_id == entry.job_id && at->attempt == entry.attempt) {
    *at = std::move(entry);
  } else {
    entries_.insert(at, std::move(entry));
  }
}

Status SpoolDirectory::Put(const SpooledResult& entry) {
  Index(entry);
  return Write(entry);
}

Status SpoolDirectory::Write(const SpooledResult& entry) const {
  nlohmann::json doc = {
      {"job_id", entry.job_id}, {"attempt", entry.attempt}, {"result", entry.result}};
  // Durable before it is sent: fsynced, renamed, and the directory fsynced.
  return WriteFileAtomically(FileName(entry.job_id, entry.attempt),
                             doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Status SpoolDirectory::Remove(int64_t job_id, int attempt) {
  auto at = std::find_if(entries_.begin(), entries_.end(), [&](const SpooledResult& e) {
    return e.job_id == job_id && e.attempt == attempt;
  });
  if (at != entries_.end()) entries_.erase(at);
  const std::string path = FileName(job_id, attempt);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Unavailable("cannot remove " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace benchfleet
