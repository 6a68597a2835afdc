#ifndef BENCHFLEET_WORKER_MEASURE_FLOPS_H_
#define BENCHFLEET_WORKER_MEASURE_FLOPS_H_

#include <optional>

#include "common/job_spec.h"

namespace benchfleet::worker {

// Floating-point operations of one sample of one iteration of a built-in model,
// counting only the multiply-adds (2 FLOPs each) of matmuls, Linear and Conv2d
// layers and the attention products; activations, norms, pooling, softmax, the
// loss and the optimizer step are left out (a few percent at most for these
// models). Train mode counts forward + backward as 3 x forward (gradients of the
// activations and of the weights each cost about a forward pass; the input's own
// gradient is not computed, so this slightly overcounts), except matmul, whose only
// parameter is B: 2 x forward. The same count is used for every dtype. nullopt for
// torchscript, whose graph the worker does not inspect.
std::optional<double> FlopsPerSample(const JobSpec& spec);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_FLOPS_H_
