#include "worker/models/cuda_graph.h"

#include <c10/core/InferenceMode.h>
#include <torch/cuda.h>

#if defined(BENCHFLEET_TORCH_CUDA)
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <string>

#include "worker/models/workload.h"

namespace benchfleet::worker {

// Untimed passes before the capture: each may allocate (cuBLAS's workspace, cuDNN's
// autotuning), which capture would not allow.
constexpr int kWarmupPassesBeforeCapture = 3;

bool CudaGraphSupported() {
#if defined(BENCHFLEET_TORCH_CUDA)
  return torch::cuda::is_available();
#else
  return false;
#endif
}

CapturedStep CaptureForward(const std::shared_ptr<Model>& model,
                            const std::shared_ptr<std::vector<torch::Tensor>>& inputs) {
#if defined(BENCHFLEET_TORCH_CUDA)
  if (!CudaGraphSupported()) throw WorkloadError("technique \"cuda_graph\": no CUDA device here");
  if (inputs->empty() || !inputs->front().is_cuda()) {
    throw WorkloadError(
        "technique \"cuda_graph\" captures CUDA kernels: give the job a cuda device");
  }
  const c10::DeviceIndex device = inputs->front().device().index();
  // The graph (kept alive by the replay closure) and its output.
  auto graph = std::make_shared<at::cuda::CUDAGraph>();
  CapturedStep step;
  try {
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device);
    c10::cuda::getCurrentCUDAStream(device).synchronize();  // the inputs are ready
    {
      c10::cuda::CUDAStreamGuard on_side(side);
      c10::InferenceMode guard;
      for (int i = 0; i < kWarmupPassesBeforeCapture; ++i) model->Forward(*inputs);
      side.synchronize();
      graph->capture_begin();
      step.output = model->Forward(*inputs);
      graph->capture_end();
    }
    side.synchronize();
  } catch (const c10::Error& e) {
    throw WorkloadError(
        std::string("technique \"cuda_graph\": the forward pass cannot be captured (it syncs "
                    "with the host, or allocates outside the graph's pool): ") +
        e.what_without_backtrace());
  }
  step.replay = [graph]() { graph->replay(); };
  return step;
#else
  (void)model;
  (void)inputs;
  throw WorkloadError("technique \"cuda_graph\": this worker's LibTorch has no CUDA");
#endif
}

}  // namespace benchfleet::worker
