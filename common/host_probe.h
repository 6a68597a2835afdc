// What an agent can learn of its host without LibTorch: CPU, cores, memory, OS, and the
// NVIDIA driver when one is loaded. The LibTorch side (version, BLAS, oneDNN, GPUs as
// LibTorch sees them) comes from `benchfleet-worker --probe`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

// {"hostname", "machine_id", "cpu_model", "logical_cpus", "allowed_cpus", "memory_mb",
//  "kernel", "os", "nvidia_driver"}
nlohmann::json ProbeHost();

// Parses a Linux CPU list such as "0-3,6,8-9" into sorted, unique CPU ids.
StatusOr<std::vector<int>> ParseCpuList(const std::string& text);

// The inverse: {0,1,2,3,6} -> "0-3,6".
std::string FormatCpuList(const std::vector<int>& cpus);

// CPUs this process may run on (sched_getaffinity).
std::vector<int> AllowedCpus();

}  // namespace benchfleet
