// CurveZMQ keys and the rules for when they are required. Keys are Z85 text (40
// characters), as zmq_curve_keypair makes them. A key-pair file holds two lines,
// "public <key>" and "secret <key>", and must not be readable by others; a public key
// file holds the public key, optionally followed by a name. (The coordinator's
// allow-list, a file of such lines, lives in coordinator/security/allow_list.h.)
#pragma once

#include <string>

#include "common/status.h"

namespace benchfleet {

struct CurveKeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85
};

// What a client (agent, CLI) needs to talk to a CURVE coordinator.
struct CurveClientKeys {
  CurveKeyPair client;
  std::string server_public_key;  // Z85
};

// True when this libzmq was built with CURVE (libsodium).
bool CurveAvailable();

StatusOr<CurveKeyPair> GenerateCurveKeyPair();

// Writes PREFIX.key (the pair, mode 0600) and PREFIX.pub (the public key). Unless
// `overwrite`, an existing PREFIX.key or PREFIX.pub is an error (kFailedPrecondition)
// and nothing is written: replacing a key locks out every peer that trusts the old one.
Status WriteCurveKeyPair(const CurveKeyPair& pair, const std::string& prefix,
                         bool overwrite = false);
StatusOr<CurveKeyPair> ReadCurveKeyPair(const std::string& path);

// A public key given inline (40 Z85 characters) or as the path of a .pub file.
StatusOr<std::string> ReadCurvePublicKey(const std::string& key_or_path);

// The public key on one line of a .pub file or an allow-list: "" for a blank line or
// a comment (first non-blank character '#'), the key (first word) otherwise, an error
// when that word is not a 40-character Z85 key. Text after the key is a name for people.
StatusOr<std::string> CurveKeyOnLine(const std::string& line);

}  // namespace benchfleet
