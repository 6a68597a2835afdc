// Where a job's threads go (schemas/worker.md, Thread placement): the job key
// `thread_placement`, a sweep axis. The agent picks the CPUs its worker is pinned to
// (agent/thread_placement.h); the job parser only checks the name and what a job of
// several processes cannot take.
#pragma once

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

}  // namespace benchfleet
