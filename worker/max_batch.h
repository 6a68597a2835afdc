// The largest batch that fits: a job's search.max_batch (schemas/worker.md, Largest
// batch that fits). One worker tries batch sizes, doubling from batch_size until one
// does not fit, then bisecting between the last that fit and the first that did not.
// "Fits" means the model builds and runs one iteration at that batch without running
// out of memory:
//  * CPU: within memory_mb MiB of address space above the warm worker's own
//    (RLIMIT_AS, set on this process only while the probes run), so an allocation past
//    the limit fails inside the process (std::bad_alloc, or LibTorch's "can't allocate
//    memory") and the probe is recorded as not fitting; the host never sees more.
//  * GPU: within memory_mb MiB of the device above what the warm worker's CUDA caching
//    allocator holds, the allocator capped with setMemoryFraction while the probes run,
//    so an allocation past the cap ends in its OutOfMemoryError. A worker built without
//    LibTorch's CUDA allocator (cuda_allocator_compat.h) refuses the search.
#ifndef BENCHFLEET_WORKER_MAX_BATCH_H_
#define BENCHFLEET_WORKER_MAX_BATCH_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/job_spec.h"

namespace benchfleet::worker {

// One batch size tried.
struct BatchProbe {
  std::int64_t batch_size = 0;
  bool fits = false;
  std::string reason;  // why it did not fit (the allocation failure), empty when it did
};

// The search itself: probes `start`, 2 start, 4 start, ... (never above `cap`) until a
// batch does not fit, then bisects between the last that fit and the first that did
// not, so the answer b has b fitting and b + 1 not (unless b is `cap`). Returns the
// probes in the order tried.
std::vector<BatchProbe> SearchLargestBatch(std::int64_t start, std::int64_t cap,
                                           const std::function<BatchProbe(std::int64_t)>& probe);
// The largest batch of `probes` that fit; 0 when none did.
std::int64_t LargestFitting(const std::vector<BatchProbe>& probes);

struct MaxBatchResult {
  std::int64_t max_batch = 0;
  std::int64_t memory_mb = 0;
  std::vector<BatchProbe> probes;
  std::string limit;  // "address_space" (CPU) or "device" (GPU)
  // CPU: the warm worker's address space; GPU: what its caching allocator holds, MiB.
  std::optional<double> baseline_mb;
  // CPU: the RLIMIT_AS set; GPU: the allocator's cap; baseline_mb + memory_mb (on a GPU
  // at most the device's memory), MiB.
  std::optional<double> limit_mb;
  double search_s = 0;
  // The result's `search` object (schemas/worker.md).
  nlohmann::json Json() const;
};

// Runs the search for `spec` (spec.max_batch set; thread and backend settings already
// applied). Throws WorkloadError when not even batch_size fits, or when a probe fails
// for another reason than memory (the job could not run at any batch).
MaxBatchResult SearchMaxBatch(const JobSpec& spec);

// This process's address space (VmSize in /proc/self/status), MiB: what RLIMIT_AS
// bounds. nullopt when /proc is unreadable.
std::optional<double> AddressSpaceMiB();

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MAX_BATCH_H_
