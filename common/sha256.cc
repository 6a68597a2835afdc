#include "common/sha256.h"

#include <sodium.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

namespace benchfleet {
namespace {

static_assert(sizeof(crypto_hash_sha256_state) <= 128, "Sha256::state_ is too small");

std::string Hex(const unsigned char* digest) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * crypto_hash_sha256_BYTES);
  for (size_t i = 0; i < crypto_hash_sha256_BYTES; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

crypto_hash_sha256_state* State(unsigned char* storage) {
  return reinterpret_cast<crypto_hash_sha256_state*>(storage);
}

}  // namespace

std::string Sha256Hex(const std::string& bytes) {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  return Hex(digest);
}

Sha256::Sha256() { crypto_hash_sha256_init(State(state_)); }

void Sha256::Update(const char* data, size_t size) {
  crypto_hash_sha256_update(State(state_), reinterpret_cast<const unsigned char*>(data), size);
}

std::string Sha256::FinalHex() {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256_final(State(state_), digest);
  return Hex(digest);
}

StatusOr<FileDigest> Sha256OfFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path + ": " + std::strerror(errno));
  Sha256 hash;
  FileDigest out;
  std::vector<char> piece(1 << 20);
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    const std::streamsize got = in.gcount();
    if (got <= 0) break;
    hash.Update(piece.data(), static_cast<size_t>(got));
    out.size += got;
  }
  if (in.bad()) return Internal("cannot read " + path + ": " + std::strerror(errno));
  out.sha256 = hash.FinalHex();
  return out;
}

std::string Base64Encode(const std::string& bytes) {
  const int variant = sodium_base64_VARIANT_ORIGINAL;
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), variant), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                    bytes.size(), variant);
  out.resize(std::strlen(out.c_str()));
  return out;
}

StatusOr<std::string> Base64Decode(const std::string& text) {
  std::string out(text.size() / 4 * 3 + 3, '\0');
  size_t length = 0;
  const char* end = nullptr;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(),
                        text.size(), nullptr, &length, &end, sodium_base64_VARIANT_ORIGINAL) != 0 ||
      end != text.data() + text.size()) {
    return InvalidArgument("not base64");
  }
  out.resize(length);
  return out;
}

}  // namespace benchfleet
