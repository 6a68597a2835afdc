#ifndef BENCHFLEET_WORKER_OMP_WAIT_POLICY_H_
#define BENCHFLEET_WORKER_OMP_WAIT_POLICY_H_

#include <optional>
#include <string>

namespace benchfleet::worker {

// The wait policy a process linking this file starts with when its
// environment does not name one.
inline constexpr const char* kDefaultOmpWaitPolicy = "PASSIVE";

// OMP_WAIT_POLICY as the OpenMP runtime of this process read it at start-up;
// nullopt when unset (only if the start-up re-exec could not run).
//
// Linking this file into an executable makes the process, before any shared
// library initialises, re-execute itself with OMP_WAIT_POLICY=PASSIVE added
// when the variable is unset. Why: libgomp reads the variable once, in its
// constructor, and by default its idle threads spin; on a small host they
// then steal the cores OpenBLAS's own thread pool is computing on (measured:
// MLP 1024-1024-10 batch 64 at 2 threads 3.95 ms spinning vs 1.12 ms
// passive). Setting the variable from main() is too late, and re-executing
// from main() would pay LibTorch's static initialisation twice.
std::optional<std::string> OmpWaitPolicy();

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_OMP_WAIT_POLICY_H_
