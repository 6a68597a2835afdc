// The CUDA caching allocator's calls the max-batch search makes, in one place. They live
// in libc10_cuda, which the worker links only against a CUDA LibTorch
// (BENCHFLEET_TORCH_CUDA, worker/CMakeLists.txt): Debian's CPU-only LibTorch 1.13 has the
// c10/cuda headers but no c10_cuda. setMemoryFraction, emptyCache and getDeviceStats
// have these names in 1.13 and in 2.x (2.x routes them through the allocator object and
// takes c10::DeviceIndex; the stats moved to c10/core/CachingDeviceAllocator.h, index 0
// still being the aggregate of all pools). Include only from max_batch.cc.
#ifndef BENCHFLEET_WORKER_CUDA_ALLOCATOR_COMPAT_H_
#define BENCHFLEET_WORKER_CUDA_ALLOCATOR_COMPAT_H_

#include <cstdint>

#if defined(BENCHFLEET_TORCH_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime_api.h>
#endif

namespace benchfleet::worker::cuda_allocator_compat {

// Whether this build can cap the caching allocator (it links libc10_cuda).
#if defined(BENCHFLEET_TORCH_CUDA)
inline constexpr bool kCanLimit = true;
#else
inline constexpr bool kCanLimit = false;
#endif

#if defined(BENCHFLEET_TORCH_CUDA)

// GPU `device`'s memory, bytes (what setMemoryFraction takes its fraction of).
inline std::int64_t DeviceTotalBytes(int device) {
  cudaDeviceProp properties{};
  C10_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  return static_cast<std::int64_t>(properties.totalGlobalMem);
}

// Bytes the caching allocator holds from `device` (in use and cached): what
// setMemoryFraction's cap is compared with.
inline std::int64_t ReservedBytes(int device) {
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  return stats.reserved_bytes[0].current;  // [0]: every pool together
}

// From now on an allocation that would take the allocator past `fraction` of `device`'s
// memory frees the cache, retries, then throws c10::OutOfMemoryError. 1.0: no cap.
inline void SetMemoryFraction(double fraction, int device) {
  c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction,
                                                     static_cast<c10::DeviceIndex>(device));
}

// Hands every cached, unused block back to the driver.
inline void EmptyCache() { c10::cuda::CUDACachingAllocator::emptyCache(); }

#else

inline std::int64_t DeviceTotalBytes(int) { return 0; }
inline std::int64_t ReservedBytes(int) { return 0; }
inline void SetMemoryFraction(double, int) {}
inline void EmptyCache() {}

#endif

}  // namespace benchfleet::worker::cuda_allocator_compat

#endif  // BENCHFLEET_WORKER_CUDA_ALLOCATOR_COMPAT_H_
