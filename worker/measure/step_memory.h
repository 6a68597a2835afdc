// What one iteration holds in memory: the peak of the bytes ATen's CPU allocator had
// handed out, above what it held when the iteration began. Activations kept for
// backward, gradients and temporaries, without the process's other memory (the
// LibTorch libraries, the weights, the allocator's caches) that peak_rss_mb includes.
// Torch-free header.
#ifndef BENCHFLEET_WORKER_MEASURE_STEP_MEMORY_H_
#define BENCHFLEET_WORKER_MEASURE_STEP_MEMORY_H_

#include <functional>

namespace benchfleet::worker {

// Runs `work` once and returns that peak in MiB. Counts the allocations of the calling
// thread (and the threads LibTorch hands its thread-local state to: autograd's), which
// on the CPU are all of a model's tensors.
double PeakAllocatedMiB(const std::function<void()>& work);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_STEP_MEMORY_H_
