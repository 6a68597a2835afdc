#include "common/thread_placement.h"

namespace benchfleet {

const std::vector<std::string>& KnownThreadPlacements() {
  static const std::vector<std::string> placements = {"cores", "spread", "smt", "node", "os"};
  return placements;
}

std::string JobThreadPlacement(const nlohmann::json& job) {
  if (!job.is_object()) return kDefaultThreadPlacement;
  const auto it = job.find("thread_placement");
  return it != job.end() && it->is_string() ? it->get<std::string>() : kDefaultThreadPlacement;
}

}  // namespace benchfleet
