// Technique "cuda_graph": one forward pass of a model on a GPU captured into a CUDA graph
// (at::cuda::CUDAGraph) and replayed as each iteration, so the step is launched as one
// graph instead of kernel by kernel. Only a worker built against a CUDA LibTorch
// (BENCHFLEET_TORCH_CUDA) runs it; elsewhere it is refused with the reason.
#ifndef BENCHFLEET_WORKER_MODELS_CUDA_GRAPH_H_
#define BENCHFLEET_WORKER_MODELS_CUDA_GRAPH_H_

#include <functional>
#include <memory>
#include <vector>

#include "worker/models/model.h"

namespace benchfleet::worker {

// True where this worker can capture CUDA graphs: its LibTorch has CUDA and sees a GPU.
bool CudaGraphSupported();

struct CapturedStep {
  std::function<void()> replay;  // one iteration: the graph replayed on the current stream
  torch::Tensor output;          // the graph's output, which each replay writes again
};

// Warms `model` up on `inputs` (on their GPU) on a side stream (cuBLAS's workspace,
// cuDNN's autotuning: nothing may allocate during capture), then captures one forward
// pass under InferenceMode. Throws WorkloadError with the reason where it cannot.
CapturedStep CaptureForward(const std::shared_ptr<Model>& model,
                            const std::shared_ptr<std::vector<torch::Tensor>>& inputs);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MODELS_CUDA_GRAPH_H_
