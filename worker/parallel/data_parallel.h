// Data-parallel training across ranks (the job's `parallel` object, kind "data"): each
// rank a benchfleet-worker process holding the whole model, training on its shard of
// one synthetic global batch, gradients averaged over the ranks with c10d all-reduce in
// buckets as DistributedDataParallel does (LibTorch has no C++ DDP). schemas/worker.md
// has what it reports and how it is checked.
#pragma once

#include <cstdint>
#include <string>

#include "common/job_spec.h"
#include "worker/models/workload.h"

namespace benchfleet::worker {

// Meets the other ranks, gives every rank rank 0's parameters, checks a few steps
// against one process training on the whole batch, times rank 0 alone on its shard
// (the one-rank baseline), and returns the data-parallel step to time. Throws
// WorkloadError when the rendezvous or a check fails.
PreparedWorkload PrepareDataParallel(const JobSpec& spec);

// Gradients are all-reduced in buckets of at most this many bytes, filled in reverse
// parameter order (the order backward produces them); a parameter larger than a
// bucket has one of its own. Returns the parameter indices of each bucket.
std::vector<std::vector<std::size_t>> PlanBuckets(const std::vector<std::int64_t>& param_bytes,
                                                  std::int64_t bucket_bytes);

}  // namespace benchfleet::worker
