// What an agent says of its host when it registers (schemas/protocol.md "register"),
// parsed once at the coordinator's edge into typed fields. Matching, the store and
// status read these, never the raw JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

struct GpuInfo {
  int64_t index = 0;
  std::string name;
  std::optional<double> memory_mb;
};

struct Capabilities {
  // host: from the agent's host probe
  std::string hostname;
  std::string machine_id;  // empty when the agent did not say; then its name stands in
  std::string cpu_model;
  std::optional<int64_t> logical_cpus;
  std::optional<int64_t> memory_mb;
  // torch: from benchfleet-worker --probe
  std::string torch_version;
  bool cuda_available = false;
  // GPUs this agent's worker can use (LibTorch's view); a cuda:N job needs more than N.
  std::vector<GpuInfo> gpus;
  std::string cpus;  // the CPU list jobs run on, "0-3"
  nlohmann::json raw = nlohmann::json::object();  // as sent, stored in hosts.capabilities
};

// Errors name the field: "capabilities.host.machine_id: must be a string, got 1".
StatusOr<Capabilities> ParseCapabilities(const nlohmann::json& capabilities);

}  // namespace benchfleet
