// A GPU job's memory, from the CUDA caching allocator's own statistics (libc10_cuda):
// the bytes tensors hold, not NVML's device-wide "used", which also counts the CUDA
// context, the allocator's cache and other processes. Compiled with real statistics
// only against a CUDA LibTorch (BENCHFLEET_TORCH_CUDA); elsewhere every call says why
// not. Include only from the worker's LibTorch code.
#ifndef BENCHFLEET_WORKER_MEASURE_DEVICE_MEMORY_H_
#define BENCHFLEET_WORKER_MEASURE_DEVICE_MEMORY_H_

#include <functional>
#include <optional>
#include <string>

namespace benchfleet::worker {

struct DeviceMemory {
  double allocated_mb = 0;       // held by tensors now
  double peak_allocated_mb = 0;  // the most held by tensors since the last reset
  double peak_reserved_mb = 0;   // the most the allocator held from the device (tensors + cache)
};

// Starts the peaks of CUDA device `index` afresh (at the current holding). Returns
// false, with the reason in *why_not, where there are no statistics to reset.
bool ResetDeviceMemoryPeaks(int index, std::string* why_not);

// The allocator's figures for device `index`; nullopt with the reason where this
// LibTorch has none.
std::optional<DeviceMemory> ReadDeviceMemory(int index, std::string* why_not);

// The most one run of `work` (then `sync`, which waits for its kernels) held above what
// tensors held when it started, MiB: the GPU twin of PeakAllocatedMiB (step_memory.h).
std::optional<double> StepPeakDeviceMiB(int index, const std::function<void()>& work,
                                        const std::function<void()>& sync, std::string* why_not);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_DEVICE_MEMORY_H_
