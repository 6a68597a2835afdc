// What an agent can learn of its host without LibTorch: CPU, cores, memory, OS, and the
// NVIDIA driver when one is loaded. The LibTorch side (version, BLAS, oneDNN, GPUs as
// LibTorch sees them) comes from `benchfleet-worker --probe`.
#pragma once

#include "common/capabilities.h"

namespace benchfleet {

// The register message's capabilities.host. Sets every member but `kernel` and `arch`
// when uname() fails, and `logical_cpus` when sysconf() does; `nvidia_driver` is sent
// as null without a driver.
HostFacts ProbeHost();

}  // namespace benchfleet
