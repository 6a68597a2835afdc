// The job's `reference` model (schemas/worker.md): a second model, built-in or a
// TorchScript file (a teacher), whose outputs the job's are compared with on the same
// inputs. LibTorch types appear here: worker translation units only.
#ifndef BENCHFLEET_WORKER_MODELS_REFERENCE_H_
#define BENCHFLEET_WORKER_MODELS_REFERENCE_H_

#include <nlohmann/json.hpp>
#include <vector>

#include "common/job_spec.h"
#include "worker/models/model.h"

namespace benchfleet::worker {

struct ReferenceOutput {
  torch::Tensor output;     // on the job's inputs, fp32, eval mode
  bool classifier = false;  // a built-in classifier (mlp, cnn): top-1 agreement applies
  nlohmann::json report;    // the result's `reference` object: model, path, params
};

// Builds `reference` (its weights drawn after torch::manual_seed(reference.seed), as a
// job of that model would draw them), runs it once on `inputs` and checks that its
// output has the shape of `job_output`. Throws WorkloadError naming `reference` when it
// cannot be loaded, its inputs differ from the job's or its output's shape does.
ReferenceOutput RunReference(const JobSpec& reference, const std::vector<torch::Tensor>& inputs,
                             const torch::Tensor& job_output);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MODELS_REFERENCE_H_
