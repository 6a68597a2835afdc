#include "coordinator/security/allow_list.h"

#include <fstream>
#include <sstream>

#include "common/curve.h"

namespace benchfleet {

StatusOr<AllowList> ReadAllowList(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("allow-list " + path + " cannot be read");
  AllowList keys;
  std::map<std::string, int> line_of_key;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    auto key = CurveKeyOnLine(line);
    if (!key.ok()) return InvalidArgument(where + key.status().message());
    if (key->empty()) continue;  // a blank line or a comment
    // The key is the line's first word (CurveKeyOnLine); the role is the second.
    std::istringstream words(line);
    std::string first, role_name;
    words >> first >> role_name;
    std::optional<Role> role = RoleNamed(role_name);
    if (!role) {
      return InvalidArgument(
          where +
          (role_name.empty() ? "no role after the key" : "\"" + role_name + "\" is not a role") +
          ": write " + RoleNames());
    }
    auto [earlier, added] = line_of_key.emplace(*key, number);
    if (!added) {
      return InvalidArgument(where + "the key is already on line " +
                             std::to_string(earlier->second) +
                             "; list each key once, with one role");
    }
    keys[*key] = *role;
  }
  return keys;
}

bool IsLoopbackEndpoint(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0) return true;
  if (endpoint.rfind("tcp://", 0) != 0) return false;
  std::string host = endpoint.substr(6, endpoint.rfind(':') - 6);
  return host.rfind("127.", 0) == 0 || host == "localhost" || host == "[::1]" || host == "::1";
}

}  // namespace benchfleet
