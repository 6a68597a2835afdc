// Pruning a built-in model (the job's `prune`, schemas/worker.md) and the figures a
// pruned result reports. LibTorch types appear here: worker translation units only.
#ifndef BENCHFLEET_WORKER_MODELS_PRUNE_H_
#define BENCHFLEET_WORKER_MODELS_PRUNE_H_

#include <cstdint>
#include <nlohmann/json.hpp>

#include "common/job_spec.h"
#include "worker/models/model.h"

namespace benchfleet::worker {

// Elements of every parameter of `model` (zeros included).
std::int64_t CountParameters(Model& model);

// Prunes `model` (built from `spec`, fp32, eval mode) as spec.prune says, in place:
// "magnitude" zeroes the smallest |w| of each Linear and Conv weight; "structured"
// replaces the pruned layers' tensors by smaller dense ones of the kept rows. Returns
// the result's `prune` object: kind, its share, params_unpruned, weight_sparsity (zeros
// among the Linear and Conv weights after pruning) and the layers pruned. Throws
// WorkloadError when the model has nothing to prune.
nlohmann::json PruneModel(Model& model, const JobSpec& spec);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MODELS_PRUNE_H_
