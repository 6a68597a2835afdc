// CurveZMQ keys and the rules for when they are required. Keys are Z85 text (40
// characters), as zmq_curve_keypair makes them. A key-pair file holds two lines,
// "public <key>" and "secret <key>", and must not be readable by others; a public key
// file (or an allow-list line) holds the public key, optionally followed by a name.
#pragma once

#include <set>
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

// Writes PREFIX.key (the pair, mode 0600) and PREFIX.pub (the public key).
Status WriteCurveKeyPair(const CurveKeyPair& pair, const std::string& prefix);
StatusOr<CurveKeyPair> ReadCurveKeyPair(const std::string& path);

// A public key given inline (40 Z85 characters) or as the path of a .pub file.
StatusOr<std::string> ReadCurvePublicKey(const std::string& key_or_path);

// The allow-list: one public key per line, a line starting with '#' is a comment, text after the key is
// a name for people. Every key is validated; a bad line is an error naming its number.
StatusOr<std::set<std::string>> ReadAllowList(const std::string& path);

// True for endpoints only this machine can reach (loopback TCP, ipc, inproc), where
// running without CURVE is the default; anything else needs CURVE or --insecure.
bool IsLoopbackEndpoint(const std::string& endpoint);

}  // namespace benchfleet
