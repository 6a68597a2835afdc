// Who may connect to the coordinator: the allow-list of CURVE public keys its ZAP
// handler admits, and the rule for where serving without CURVE is acceptable.
#pragma once

#include <map>
#include <string>

#include "common/roles.h"
#include "common/status.h"

namespace benchfleet {

// Each allowed public key (Z85) and its role.
using AllowList = std::map<std::string, Role>;

// The allow-list: one key per line, "<public key> <role> [name for people...]", the role
// one of agent, viewer, operator, admin (common/roles.h); a line starting with '#' is a
// comment. Every line is validated, and a bad one is an error naming the file and the
// line's number ("allow.txt:2: not a 40-character Z85 public key", "allow.txt:3: no
// role after the key: write agent, viewer, operator or admin"). A key is listed once:
// a second line for it is an error too, since which of its roles held would be a guess.
StatusOr<AllowList> ReadAllowList(const std::string& path);

// True for endpoints only this machine can reach (loopback TCP, ipc, inproc), where
// running without CURVE is the default; anything else needs CURVE or --insecure.
bool IsLoopbackEndpoint(const std::string& endpoint);

}  // namespace benchfleet
