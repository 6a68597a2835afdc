// The CPUs a job's worker is pinned to, by the job's thread_placement
// (common/thread_placement.h; schemas/worker.md, Thread placement): the agent reads its
// CPUs' topology from sysfs once, and picks a job's CPUs from it. What it picked goes
// with the result (`placement`: the policy, the CPUs, how many cores and NUMA nodes they
// span, whether two threads share a core).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/thread_placement.h"

namespace benchfleet {

struct CpuTopology {
  struct Cpu {
    int id = 0;
    int core = 0;     // a number unique to its physical core on this host
    int package = 0;  // physical_package_id
    int node = 0;     // NUMA node (0 where the kernel has none)
  };
  std::vector<Cpu> cpus;  // the agent's CPUs, in its order
  // How many physical cores, hardware threads a core and CPUs of the largest NUMA node:
  // what register tells the coordinator of them.
  CpuShape Shape() const;
};
// The topology of `cpus` under `root` ("/" on a host; a test's directory with sys/).
// A CPU whose files are missing (a VM may lack some) is its own core, package 0, node 0.
CpuTopology ReadCpuTopology(const std::vector<int>& cpus, const std::string& root = "/");

struct ThreadPlacement {
  std::string policy;
  std::vector<int> cpus;
  int cores = 0;            // distinct physical cores among `cpus`
  int nodes = 0;            // distinct NUMA nodes
  bool smt_shared = false;  // two of `cpus` are hardware threads of one core
  nlohmann::json ToJson() const;
};
// The CPUs of a job of `threads` threads under `policy`, or why this agent cannot give it.
StatusOr<ThreadPlacement> PlaceThreads(const CpuTopology& topology, int threads,
                                       const std::string& policy);

}  // namespace benchfleet
