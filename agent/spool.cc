#include "agent/spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "common/log.h"

namespace fs = std::filesystem;

namespace benchfleet {
namespace {

constexpr const char* kSuffix = ".result.json";
constexpr const char* kTempSuffix = ".tmp";

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() > suffix.size() &&
         text.compare(text.size() - suffix.size(), std::string::npos, suffix) == 0;
}

bool EarlierJob(const SpooledResult& a, const SpooledResult& b) {
  return std::tie(a.job_id, a.attempt) < std::tie(b.job_id, b.attempt);
}

Status WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n = write(fd, data.data() + written, data.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Unavailable("cannot write " + path + ": " + std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status FsyncPath(const std::string& path, int flags) {
  int fd = open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return Unavailable("cannot open " + path + ": " + std::strerror(errno));
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc != 0) return Unavailable("cannot fsync " + path + ": " + std::strerror(err));
  return Status::Ok();
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
    if (EndsWith(name, std::string(kSuffix) + kTempSuffix)) {
      // A Put interrupted before its rename: that result was never sent, and its job's
      // lease runs out at the coordinator, which hands the job out again.
      fs::remove(file.path(), ec);
      continue;
    }
    if (!EndsWith(name, kSuffix)) continue;
    std::ifstream in(file.path());
    std::stringstream text;
    text << in.rdbuf();
    auto doc = nlohmann::json::parse(text.str(), nullptr, false);
    if (doc.is_discarded() || !doc.is_object() ||
        !doc.value("job_id", nlohmann::json()).is_number_integer() ||
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
  const std::string final_path = FileName(entry.job_id, entry.attempt);
  const std::string tmp_path = final_path + kTempSuffix;
  nlohmann::json doc = {
      {"job_id", entry.job_id}, {"attempt", entry.attempt}, {"result", entry.result}};
  const std::string data = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  int fd = open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Unavailable("cannot create " + tmp_path + ": " + std::strerror(errno));
  Status written = WriteAll(fd, data, tmp_path);
  if (written.ok() && fsync(fd) != 0) {
    written = Unavailable("cannot fsync " + tmp_path + ": " + std::strerror(errno));
  }
  close(fd);
  if (!written.ok()) {
    unlink(tmp_path.c_str());
    return written;
  }
  if (rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    return Unavailable("cannot rename " + tmp_path + ": " + std::strerror(errno));
  }
  // The rename is durable only once the directory itself is synced.
  return FsyncPath(path_, O_RDONLY | O_DIRECTORY);
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
