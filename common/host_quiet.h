// When a host counts as busy for a benchmark: what the worker flags after timing
// (`disturbed`, worker/measure/host_load.h) and what the agent's check before timing
// calls busy (agent/host_check.h), one threshold for both.
#pragma once

namespace benchfleet {

// Other processes kept more than this many CPUs busy on average, or ...
inline constexpr double kDisturbedBusyCpus = 0.2;
// ... the hypervisor took more than this fraction of all CPU time (steal).
inline constexpr double kDisturbedStealFraction = 0.02;
// An SMT sibling of a job's CPU busier than this shares its core's pipelines with it.
inline constexpr double kBusySiblingFraction = 0.2;

}  // namespace benchfleet
