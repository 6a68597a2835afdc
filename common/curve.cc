#include "common/curve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace benchfleet {
namespace {

constexpr size_t kZ85KeyLength = 40;

bool ValidZ85Key(const std::string& key) {
  if (key.size() != kZ85KeyLength) return false;
  uint8_t decoded[32];
  return zmq_z85_decode(decoded, key.c_str()) != nullptr;
}

// Trims blanks; a line whose first non-blank character is '#' is a comment. (Only at
// the start: '#' is one of Z85's characters, so it may occur inside a key.)
std::string Trim(std::string text) {
  size_t start = text.find_first_not_of(" \t");
  if (start != std::string::npos && text[start] == '#') return "";
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  size_t last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

// Creates `path` (never follows or clobbers an existing file: O_EXCL) holding `text`.
Status WriteNewFile(const std::string& path, mode_t mode, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST) return FailedPrecondition(path + " exists; not replaced");
    return Unavailable("cannot create " + path + ": " + std::strerror(errno));
  }
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      close(fd);
      return Unavailable("cannot write " + path + ": " + std::strerror(err));
    }
    written += static_cast<size_t>(n);
  }
  if (close(fd) != 0) return Unavailable("cannot write " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace

bool CurveAvailable() { return zmq_has("curve") != 0; }

StatusOr<CurveKeyPair> GenerateCurveKeyPair() {
  if (!CurveAvailable()) return FailedPrecondition("this libzmq was built without CURVE support");
  char public_key[41];
  char secret_key[41];
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    return Internal(std::string("zmq_curve_keypair failed: ") + zmq_strerror(zmq_errno()));
  }
  return CurveKeyPair{public_key, secret_key};
}

Status WriteCurveKeyPair(const CurveKeyPair& pair, const std::string& prefix, bool overwrite) {
  const std::string key_path = prefix + ".key";
  const std::string pub_path = prefix + ".pub";
  for (const std::string& path : {key_path, pub_path}) {
    struct stat info {};
    if (lstat(path.c_str(), &info) != 0) continue;
    if (!overwrite) {
      return FailedPrecondition(path +
                                " exists; replacing its key would lock out every peer "
                                "that trusts the old one");
    }
    // Replaced by a new file rather than truncated, so the new secret never sits in a
    // file with the old one's permissions.
    if (unlink(path.c_str()) != 0) {
      return Unavailable("cannot replace " + path + ": " + std::strerror(errno));
    }
  }
  // Created 0600 from the start, so the secret is never readable by others.
  RETURN_IF_ERROR(WriteNewFile(key_path, 0600,
                               "public " + pair.public_key + "\nsecret " + pair.secret_key + "\n"));
  return WriteNewFile(pub_path, 0644, pair.public_key + "\n");
}

StatusOr<CurveKeyPair> ReadCurveKeyPair(const std::string& path) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return NotFound("key file " + path + " does not exist");
  if ((info.st_mode & 077) != 0) {
    return FailedPrecondition("key file " + path + " is readable by others; chmod 600 it");
  }
  std::ifstream in(path);
  CurveKeyPair pair;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(Trim(line));
    std::string kind, key;
    words >> kind >> key;
    if (kind == "public") pair.public_key = key;
    if (kind == "secret") pair.secret_key = key;
  }
  if (!ValidZ85Key(pair.public_key) || !ValidZ85Key(pair.secret_key)) {
    return InvalidArgument(
        "key file " + path +
        " must hold \"public <key>\" and \"secret <key>\" lines with 40-character "
        "Z85 keys (make one with benchfleet keygen)");
  }
  return pair;
}

StatusOr<std::string> CurveKeyOnLine(const std::string& line) {
  std::istringstream words(Trim(line));
  std::string key;
  words >> key;
  if (!key.empty() && !ValidZ85Key(key))
    return InvalidArgument("not a 40-character Z85 public key");
  return key;
}

StatusOr<std::string> ReadCurvePublicKey(const std::string& key_or_path) {
  if (ValidZ85Key(key_or_path)) return key_or_path;
  std::ifstream in(key_or_path);
  if (!in)
    return NotFound("\"" + key_or_path + "\" is neither a Z85 public key nor a readable file");
  std::string line;
  while (std::getline(in, line)) {
    auto key = CurveKeyOnLine(line);
    if (!key.ok()) return InvalidArgument(key_or_path + ": " + key.status().message());
    if (!key->empty()) return *key;
  }
  return InvalidArgument(key_or_path + ": no public key in the file");
}

}  // namespace benchfleet
