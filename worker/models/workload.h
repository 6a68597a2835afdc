#ifndef BENCHFLEET_WORKER_MODELS_WORKLOAD_H_
#define BENCHFLEET_WORKER_MODELS_WORKLOAD_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/job_spec.h"
#include "worker/measure/sampler.h"

namespace benchfleet::worker {

// A LibTorch failure the job's author can act on (e.g. the model does not fit
// in memory); what() says what happened and what to change.
class WorkloadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The job ran out of memory (host or device) at its batch size: what a search for the
// largest batch that fits (max_batch.h) takes for "does not fit".
class OutOfMemory : public WorkloadError {
 public:
  using WorkloadError::WorkloadError;
};

// The SGD step size of mode "train". It does not change what a step costs; a small
// one keeps the weights finite over the thousands of steps a measurement takes.
inline constexpr double kTrainLearningRate = 1e-3;

// A model built and ready to time.
struct PreparedWorkload {
  // One unit of measured work: a forward pass over one batch (inference), or
  // forward, backward and an optimizer step (train). Throws WorkloadError.
  std::function<void()> iteration;
  // Waits until the work queued by the iterations so far is done (GPU jobs); empty
  // where iteration() returns only when its work is done (CPU).
  std::function<void()> block_end;
  std::int64_t param_bytes = 0;  // bytes of the weights the forward pass reads
  // For dtypes other than fp32: {max_abs_err, mean_abs_err, rel_err,
  // top1_agreement} of the model's output against the fp32 model with the same
  // weights on the same inputs; null for fp32.
  nlohmann::json accuracy;
  // Set for jobs run by several ranks (the collectives): every timing decision is
  // rank 0's (sampler.h), or the ranks' calls would not pair up.
  Agree agree;
  // Fields the workload adds to the result once timed, from its measurement and the
  // median time of one iteration in ms (a collective's bandwidths); empty when none.
  std::function<nlohmann::json(const Measurement& m, double median_ms)> report;
};

// Builds the model described by `spec` (validated; thread and device settings
// already applied): weights and inputs drawn after torch::manual_seed(spec.seed),
// converted to the job's dtype and moved to its device, and checked with one
// untimed forward pass. Throws WorkloadError when the job cannot run as given.
PreparedWorkload PrepareWorkload(const JobSpec& spec);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MODELS_WORKLOAD_H_
