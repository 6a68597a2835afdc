#include "agent/spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/log.h"

namespace fs = std::filesystem;

namespace benchfleet {
namespace {

constexpr const char* kSuffix = ".result.json";

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
  return Status::Ok();
}

std::string SpoolDirectory::FileName(int64_t job_id, int attempt) const {
  return path_ + "/job-" + std::to_string(job_id) + "-" + std::to_string(attempt) + kSuffix;
}

Status SpoolDirectory::Put(const SpooledResult& entry) {
  const std::string final_path = FileName(entry.job_id, entry.attempt);
  const std::string tmp_path = final_path + ".tmp";
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

std::vector<SpooledResult> SpoolDirectory::List() {
  std::vector<SpooledResult> entries;
  std::error_code ec;
  for (const auto& file : fs::directory_iterator(path_, ec)) {
    const std::string name = file.path().filename().string();
    if (name.size() <= std::strlen(kSuffix) ||
        name.compare(name.size() - std::strlen(kSuffix), std::string::npos, kSuffix) != 0) {
      continue;
    }
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
    entries.push_back({doc["job_id"].get<int64_t>(), doc["attempt"].get<int>(), doc["result"]});
  }
  std::sort(entries.begin(), entries.end(), [](const SpooledResult& a, const SpooledResult& b) {
    return std::tie(a.job_id, a.attempt) < std::tie(b.job_id, b.attempt);
  });
  return entries;
}

Status SpoolDirectory::Remove(int64_t job_id, int attempt) {
  const std::string path = FileName(job_id, attempt);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Unavailable("cannot remove " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace benchfleet
