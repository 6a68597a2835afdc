// What every job of several ranks does first and throughout: meet the other ranks at
// rank 0's store, and take each timing decision as rank 0 takes it. Includes the c10d
// headers (c10d_compat.h): only the worker's rank workloads include it.
#pragma once

#include "common/job_spec.h"
#include "worker/measure/sampler.h"
#include "worker/parallel/c10d_compat.h"

namespace benchfleet::worker {

struct RankGroup {
  c10d_compat::StorePtr store;
  c10d_compat::ProcessGroupPtr group;
};

// Rank 0 hosts the store, the others connect; a Gloo group on the job's address.
// Throws WorkloadError naming the store, the address and the timeout when the others
// do not come within distributed.timeout_s.
RankGroup JoinRanks(const DistributedSpec& rank);

// An Agree (sampler.h) that broadcasts rank 0's value of each decision to every rank.
Agree RankZeroDecides(const c10d_compat::ProcessGroupPtr& group);

// The one-rank baseline of a job of several ranks: `iteration` timed on this rank alone
// with the job's timing; its median, ms. `block_end` and `min_block_s` shape the blocks
// as in MeasureWorkload (TimingOptions::min_block_s): a baseline on a GPU passes the
// very block_end and minimum block the job's own run is timed with, so both wait for
// their kernels once per block of the same minimum length, not once per iteration.
double MedianMsAlone(const std::function<void()>& iteration, const TimingSpec& timing,
                     const std::function<void()>& block_end = nullptr,
                     double min_block_s = kMinBlockSeconds);

// A LibTorch error's message without its backtrace.
std::string ErrorMessage(const std::exception& e);

}  // namespace benchfleet::worker
