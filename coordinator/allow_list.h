// Who may connect to the coordinator: the allow-list of CURVE public keys its ZAP
// handler admits, and the rule for where serving without CURVE is acceptable.
#pragma once

#include <set>
#include <string>

#include "common/status.h"

namespace benchfleet {

// The allow-list: one public key per line, a line starting with '#' is a comment, text
// after the key is a name for people. Every key is validated; a bad line is an error
// naming its number ("allow.txt:2: not a 40-character Z85 public key").
StatusOr<std::set<std::string>> ReadAllowList(const std::string& path);

// True for endpoints only this machine can reach (loopback TCP, ipc, inproc), where
// running without CURVE is the default; anything else needs CURVE or --insecure.
bool IsLoopbackEndpoint(const std::string& endpoint);

}  // namespace benchfleet
