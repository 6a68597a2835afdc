#include "common/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace benchfleet {
namespace {

std::string SystemError(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

Status WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n = write(fd, data.data() + written, data.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Unavailable(SystemError("cannot write " + path, errno));
    }
    written += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// The directory holding `path` ("." for a bare name).
std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFound(path + " does not exist");
    return Unavailable(SystemError("cannot open " + path, err));
  }
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return Unavailable(SystemError("cannot read " + path, err));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return text;
}

StatusOr<nlohmann::json> ParseJson(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // The parser's message carries the position ("parse error at line 1, column 3: ...").
    return InvalidArgument(what + " is not valid JSON: " + e.what());
  }
}

StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  return ParseJson(text, path);
}

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  // The pid keeps two processes writing the same file (ranks, a restarted daemon beside
  // its dying predecessor) off each other's temporary file.
  const std::string temp = path + kUnfinishedWriteMarker + std::to_string(getpid());
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Unavailable(SystemError("cannot create " + temp, errno));
  Status written = WriteAll(fd, content, temp);
  if (written.ok() && fsync(fd) != 0)
    written = Unavailable(SystemError("cannot fsync " + temp, errno));
  close(fd);
  if (written.ok() && rename(temp.c_str(), path.c_str()) != 0) {
    written = Unavailable(SystemError("cannot rename " + temp + " to " + path, errno));
  }
  if (!written.ok()) {
    unlink(temp.c_str());
    return written;
  }
  // The rename is durable only once the directory itself is synced.
  const std::string dir = DirectoryOf(path);
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return Unavailable(SystemError("cannot open " + dir, errno));
  const int rc = fsync(dir_fd);
  const int err = errno;
  close(dir_fd);
  if (rc != 0) return Unavailable(SystemError("cannot fsync " + dir, err));
  return Status::Ok();
}

bool IsUnfinishedWrite(const std::string& file_name, const std::string& suffix) {
  const std::string marked = suffix + kUnfinishedWriteMarker;
  const size_t at = file_name.rfind(marked);
  if (at == std::string::npos || at + marked.size() == file_name.size()) return false;
  for (size_t i = at + marked.size(); i < file_name.size(); ++i) {
    if (file_name[i] < '0' || file_name[i] > '9') return false;
  }
  return true;
}

}  // namespace benchfleet
