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

bool CpuShape::operator==(const CpuShape& other) const {
  return cpus == other.cpus && cores == other.cores && threads_per_core == other.threads_per_core &&
         largest_node == other.largest_node;
}

std::string CpuShape::Describe() const {
  auto count = [](int64_t n, const char* what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  return count(cpus, "CPU") + " on " + count(cores, "core") + ", " +
         count(threads_per_core, "hardware thread") + " a core, " + std::to_string(largest_node) +
         " in the largest NUMA node";
}

std::string PlacementRefusal(const CpuShape& shape, int64_t threads, const std::string& policy) {
  const std::string field = "thread_placement \"" + policy + "\": ";
  const int64_t n = threads < 1 ? 1 : threads;
  if (policy == "cores" || policy == "os") return "";
  if (policy == "spread") {
    if (n <= shape.cores) return "";
    return field + "one thread per core needs " + std::to_string(n) + " cores; the agent has " +
           shape.Describe();
  }
  if (policy == "smt") {
    if (shape.threads_per_core >= 2) return "";
    return field + "no core has two hardware threads (no SMT); the agent has " + shape.Describe();
  }
  if (policy == "node") {
    if (n <= shape.largest_node) return "";
    return field + std::to_string(n) + " threads need a NUMA node of as many CPUs; the agent has " +
           shape.Describe();
  }
  return field + "unknown; known: cores, spread, smt, node, os";
}

}  // namespace benchfleet
