// The collectives (allreduce, broadcast, allgather): one c10d call across the job's
// ranks, each rank a benchfleet-worker process, timed as any other iteration with
// every timing decision taken by rank 0. Gloo on the CPU; schemas/worker.md has the
// figures and the bandwidth formulas.
#pragma once

#include "common/job_spec.h"
#include "worker/models/workload.h"

namespace benchfleet::worker {

// Meets the other ranks at the job's store, checks one call of the collective against
// values known in advance, and returns the timed call. Throws WorkloadError when the
// rendezvous or the check fails (the other ranks never came within the timeout, a
// result differs).
PreparedWorkload PrepareCollective(const JobSpec& spec);

// Bus bandwidth from algorithm bandwidth, as nccl-tests define it: what each rank's
// link carries, comparable across world sizes. allreduce x 2(n-1)/n, allgather
// x (n-1)/n, broadcast x 1.
double BusBandwidthFactor(const std::string& op, std::int64_t world_size);

}  // namespace benchfleet::worker
