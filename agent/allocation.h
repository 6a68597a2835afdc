// What this host lets the agent use: the CPUs its affinity and its cgroup's cpuset both
// allow and, inside a Slurm job (SLURM_JOB_ID set), the job's allocation on this node as
// Slurm's environment states it, checked against those CPUs. Nothing is guessed: when
// Slurm's count and the CPUs the process may run on disagree in a way the agent cannot
// resolve, it refuses to start and says why (the reason lands in the job's output file).
//
// GPUs: inside a Slurm job, jobs see only the allocated ones. CUDA_VISIBLE_DEVICES as Slurm
// set it is kept; where it is unset it is made the job's SLURM_STEP_GPUS or SLURM_JOB_GPUS,
// and empty (no GPU) when the job was given none. The agent's workers inherit it, so its
// worker's probe, and so its registration, names only those.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/cgroup_cpuset.h"
#include "common/status.h"

namespace benchfleet {

// Where the facts come from, so a test can write them.
struct AllocationSources {
  // The environment variables below (SLURM_*, CUDA_VISIBLE_DEVICES) that are set.
  std::map<std::string, std::string> env;
  std::vector<int> affinity;           // sched_getaffinity
  std::optional<CgroupCpuset> cpuset;  // nullopt: no cpuset confines the process
};

// The variables read: SLURM_JOB_ID, SLURM_CPUS_ON_NODE, SLURM_JOB_CPUS_PER_NODE,
// SLURM_JOB_GPUS, SLURM_STEP_GPUS, SLURM_GPUS_ON_NODE, CUDA_VISIBLE_DEVICES.
const std::vector<std::string>& AllocationVariables();

// This process's. An error when its cgroup's cpuset file is there but unreadable.
StatusOr<AllocationSources> ReadAllocationSources();

struct SlurmAllocation {
  std::string job_id;                 // SLURM_JOB_ID
  int64_t cpus_on_node = 0;           // what Slurm allocated on this node
  std::vector<int> cpus;              // the CPUs the agent may use (affinity and cpuset)
  std::string visible_gpus;           // what CUDA_VISIBLE_DEVICES is to be: "" for no GPU
  std::string gpus_from;              // where that came from, for the log
  std::vector<std::string> warnings;  // fewer CPUs or GPUs than allocated, say

  // "Slurm job 12 on this node: 2 CPUs allocated, using CPUs 2-3 (...); GPUs 0,1 (...)"
  std::string Describe() const;
};

struct AgentResources {
  std::vector<int> cpus;                 // the CPUs jobs run on
  std::optional<SlurmAllocation> slurm;  // set inside a Slurm job
};

// The CPUs the agent's jobs may use: `cpus_flag` (--cpus, "" for all), each of which must
// be among the usable ones; inside a Slurm job, within its allocation. Errors say what
// disagrees and what to do: no CPU in common between the affinity and the cpuset; a
// job whose process may run on more CPUs than Slurm allocated (not bound to them: which
// are its own cannot be told); --cpus outside the allocation; more GPUs visible than
// allocated.
StatusOr<AgentResources> ResolveResources(const AllocationSources& sources,
                                          const std::string& cpus_flag);

}  // namespace benchfleet
