#include "coordinator/allow_list.h"

#include <fstream>

#include "common/curve.h"

namespace benchfleet {

StatusOr<std::set<std::string>> ReadAllowList(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("allow-list " + path + " cannot be read");
  std::set<std::string> keys;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    auto key = CurveKeyOnLine(line);
    if (!key.ok()) {
      return InvalidArgument(path + ":" + std::to_string(number) + ": " + key.status().message());
    }
    if (!key->empty()) keys.insert(*key);
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
