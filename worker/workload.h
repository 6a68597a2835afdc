#ifndef BENCHFLEET_WORKER_WORKLOAD_H_
#define BENCHFLEET_WORKER_WORKLOAD_H_

#include <cstdint>
#include <functional>
#include <stdexcept>

#include "worker/job_spec.h"

namespace benchfleet::worker {

// A LibTorch failure the job's author can act on (e.g. the model does not fit
// in memory); what() says what happened and what to change.
class WorkloadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A model built and ready to time.
struct PreparedWorkload {
  // One unit of measured work (one forward pass over one batch). Throws
  // WorkloadError when LibTorch fails.
  std::function<void()> iteration;
  std::int64_t param_bytes = 0;  // bytes held by the model's parameters
};

// Builds the model described by `spec` (validated, device "cpu"): for "mlp",
// Linear layers of spec.layers with ReLU between them, weights drawn after
// torch::manual_seed(spec.seed), and an input of randn(batch_size,
// layers[0]); the forward pass runs under torch::InferenceMode. Throws
// WorkloadError when LibTorch fails.
PreparedWorkload PrepareWorkload(const JobSpec& spec);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_WORKLOAD_H_
