// What an agent can learn of its host without LibTorch: CPU, cores, memory, OS, and the
// NVIDIA driver when one is loaded. The LibTorch side (version, BLAS, oneDNN, GPUs as
// LibTorch sees them) comes from `benchfleet-worker --probe`.
#pragma once

#include <nlohmann/json.hpp>

namespace benchfleet {

// {"hostname", "machine_id", "cpu_model", "logical_cpus", "allowed_cpus", "memory_mb",
//  "kernel", "arch", "os", "nvidia_driver"}
nlohmann::json ProbeHost();

}  // namespace benchfleet
