// The CPUs this process's cgroup may run on: its cpuset, as the kernel exposes it. A
// batch scheduler (Slurm's task/cgroup, a container runtime) confines a job there; the
// agent takes the CPUs that both this and its own affinity allow (agent/allocation.h).
//
// Where to look comes from the process itself: /proc/self/cgroup names its cgroup in each
// hierarchy ("3:cpuset:/slurm/uid_0/job_12" in cgroup v1, "0::/system.slice/x" in v2), and
// /proc/self/mountinfo where each hierarchy is mounted. The file read is cgroup v1's
// cpuset.effective_cpus (or cpuset.cpus) or cgroup v2's cpuset.cpus.effective, of the
// process's cgroup or, where the controller is not enabled there (v2), of the nearest
// ancestor that has it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

struct CgroupCpuset {
  std::vector<int> cpus;  // sorted; empty when the cgroup has none
  std::string file;       // where they were read, for messages
};

// From the texts of /proc/self/cgroup and /proc/self/mountinfo (their mount points are
// read as they are written: a test names directories of its own). nullopt when no
// cpuset is mounted for this process (then nothing but its affinity confines it); an
// error naming the file when a cpuset file is there but cannot be read or parsed.
StatusOr<std::optional<CgroupCpuset>> ReadCgroupCpuset(const std::string& proc_self_cgroup,
                                                       const std::string& mountinfo);

// The same for this process (its /proc/self files).
StatusOr<std::optional<CgroupCpuset>> ReadOwnCgroupCpuset();

}  // namespace benchfleet
