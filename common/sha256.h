// SHA-256 as benchfleet names content by it: host fingerprints, series, and the models
// users ship (a TorchScript file is known by the SHA-256 of its bytes, in lowercase hex).
// libsodium's implementation, which ZeroMQ's CURVE already brings.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace benchfleet {

// The SHA-256 of `bytes` as 64 lowercase hex digits.
std::string Sha256Hex(const std::string& bytes);

// True for 64 lowercase hex digits (how a model's sha256 is written everywhere). Inline:
// the job validator (common_core, which the worker links without libsodium) uses it.
inline bool IsSha256Hex(const std::string& text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// A SHA-256 fed piece by piece: a file received in chunks is hashed as it arrives.
class Sha256 {
 public:
  Sha256();
  void Update(const char* data, size_t size);
  void Update(const std::string& bytes) { Update(bytes.data(), bytes.size()); }
  // The digest of everything fed so far, as 64 lowercase hex digits; the object is
  // spent afterwards (start a new one).
  std::string FinalHex();

 private:
  alignas(64) unsigned char state_[128];  // crypto_hash_sha256_state (104 bytes)
};

// The SHA-256 and size of a file's bytes, read in 1 MiB pieces. An error names the path.
struct FileDigest {
  std::string sha256;
  int64_t size = 0;
};
StatusOr<FileDigest> Sha256OfFile(const std::string& path);

// Standard base64 (RFC 4648, with padding), as model bytes travel inside JSON messages.
std::string Base64Encode(const std::string& bytes);
// Nullopt-like error for text that is not canonical base64.
StatusOr<std::string> Base64Decode(const std::string& text);

}  // namespace benchfleet
