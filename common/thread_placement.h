// Where a job's threads go (schemas/worker.md, Thread placement): the job key
// `thread_placement`, a sweep axis. The agent picks the CPUs its worker is pinned to
// (agent/thread_placement.h); the job parser only checks the name and what a job of
// several processes cannot take.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace benchfleet {

// cores (the default): one thread per physical core, cores in the agent's CPU order,
//   a core's other hardware threads only once every core has one;
// spread: one thread per core, the cores taken in turn from each NUMA node and package
//   (the farthest apart first); refused where the agent has fewer cores than threads;
// smt: the hardware threads of each core filled before the next core; refused where no
//   core of the agent has two;
// node: the CPUs of one NUMA node only (cores first); refused where no node has enough;
// os: every CPU of the agent, the kernel places the threads.
inline constexpr const char* kDefaultThreadPlacement = "cores";
const std::vector<std::string>& KnownThreadPlacements();

// The job's thread_placement, or the default where it names none (a job already
// parsed: anything else was refused).
std::string JobThreadPlacement(const nlohmann::json& job);

// What placing threads needs to know of the CPUs an agent runs jobs on. The agent sends
// it with register (capabilities.cpu_shape, read in common/capabilities.cc), so that the
// coordinator refuses at submit a placement no agent can give, by the rule the agent
// places by (PlacementRefusal).
struct CpuShape {
  int64_t cpus = 0;              // the CPUs jobs run on
  int64_t cores = 0;             // physical cores among them
  int64_t threads_per_core = 1;  // most hardware threads of one core among them
  int64_t largest_node = 0;      // the CPUs, among them, of the NUMA node with the most
  bool operator==(const CpuShape& other) const;
  // "2 CPUs on 2 cores, 1 hardware thread a core, 2 in the largest NUMA node"
  std::string Describe() const;
};

// Why an agent of `shape` cannot run `threads` threads by `policy`, naming the field:
// "thread_placement \"spread\": one thread per core needs 4 cores; ...". Empty when it
// can: "cores" and "os" always can (more threads than CPUs share them), "spread" needs
// a core per thread, "smt" a core with two hardware threads, "node" a node with a CPU
// per thread.
std::string PlacementRefusal(const CpuShape& shape, int64_t threads, const std::string& policy);

}  // namespace benchfleet
