#ifndef BENCHFLEET_WORKER_HOST_OMP_WAIT_POLICY_H_
#define BENCHFLEET_WORKER_HOST_OMP_WAIT_POLICY_H_

// The OpenMP wait policy a job runs under (its `omp_wait_policy`: default, passive,
// active; schemas/worker.md). libgomp reads OMP_WAIT_POLICY once, in its constructor,
// before main: the agent sets the variable when it execs the worker, and a worker run
// by hand with another one re-executes itself once with the job's.
//
// Why "default" is the default: it is what a user's PyTorch runs with. Under it
// libgomp's idle threads spin for a while (GOMP_SPINCOUNT, 300,000 checks) before
// they sleep, so that the next parallel region starts without waking them; oneDNN's
// int8 and bf16 kernels, which start many short regions per forward pass, depend on
// that (MLP 1024-1024-10 int8 at batch 8 on 2 threads of the development hosts: 0.12
// ms by default and 0.51-0.67 ms passive on a Zen 4 guest, 0.26 and 0.99-1.31 ms on
// a Xeon; bench/README.md).

#include <optional>
#include <string>

namespace benchfleet::worker {

// The policy this process's OpenMP runtime started with, by the job's names:
// "default" (OMP_WAIT_POLICY unset), "passive" or "active"; any other value of the
// variable is reported as it is, lower-cased.
std::string OmpWaitPolicyInEffect();

// Whether a process running under OmpWaitPolicyInEffect() runs a job that asks for
// `policy` as asked.
bool OmpWaitPolicyMatches(const std::string& policy);

// Re-executes this program (/proc/self/exe, `argv`) with OMP_WAIT_POLICY as `policy`
// asks, once: a process that is itself such a re-execution never does it again.
// Returns only when it did not re-execute: nullopt when none was needed, else why not.
std::optional<std::string> ReexecUnderWaitPolicy(const std::string& policy, char** argv);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_HOST_OMP_WAIT_POLICY_H_
