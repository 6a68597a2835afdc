// CPU lists as Linux writes them ("0-3,6,8-9") and the CPUs this process may use. The
// agent pins each worker to its CPUs; the worker reports the affinity it ran with.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

// Parses a Linux CPU list such as "0-3,6,8-9" into sorted, unique CPU ids.
StatusOr<std::vector<int>> ParseCpuList(const std::string& text);

// The inverse: {0,1,2,3,6} -> "0-3,6".
std::string FormatCpuList(const std::vector<int>& cpus);

// CPUs this process may run on (sched_getaffinity).
std::vector<int> AllowedCpus();

}  // namespace benchfleet
