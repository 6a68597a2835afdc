#include "worker/measure/device_memory.h"

#include <cstddef>

#if defined(BENCHFLEET_TORCH_CUDA)
#include <c10/core/Device.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/util/Exception.h>
#endif

namespace benchfleet::worker {
namespace {

#if defined(BENCHFLEET_TORCH_CUDA)
constexpr double kMiB = 1024.0 * 1024.0;
// Index 0 of each StatArray is StatType::AGGREGATE (the sum over the small and large
// pools); the enum moved between namespaces in LibTorch 2.x, its order did not.
constexpr std::size_t kAggregate = 0;
#endif

}  // namespace

#if defined(BENCHFLEET_TORCH_CUDA)

bool ResetDeviceMemoryPeaks(int index, std::string* why_not) {
  try {
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
    return true;
  } catch (const c10::Error& e) {
    *why_not = std::string("the CUDA caching allocator's peaks could not be reset: ") +
               e.what_without_backtrace();
    return false;
  }
}

std::optional<DeviceMemory> ReadDeviceMemory(int index, std::string* why_not) {
  try {
    const auto stats =
        c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
    DeviceMemory memory;
    memory.allocated_mb = static_cast<double>(stats.allocated_bytes[kAggregate].current) / kMiB;
    memory.peak_allocated_mb = static_cast<double>(stats.allocated_bytes[kAggregate].peak) / kMiB;
    memory.peak_reserved_mb = static_cast<double>(stats.reserved_bytes[kAggregate].peak) / kMiB;
    return memory;
  } catch (const c10::Error& e) {
    *why_not = std::string("the CUDA caching allocator's statistics could not be read: ") +
               e.what_without_backtrace();
    return std::nullopt;
  }
}

#else

namespace {
constexpr const char* kNoCudaLibTorch =
    "this worker was built against a LibTorch without CUDA (no libc10_cuda), which has no "
    "CUDA caching allocator";
}  // namespace

bool ResetDeviceMemoryPeaks(int /*index*/, std::string* why_not) {
  *why_not = kNoCudaLibTorch;
  return false;
}

std::optional<DeviceMemory> ReadDeviceMemory(int /*index*/, std::string* why_not) {
  *why_not = kNoCudaLibTorch;
  return std::nullopt;
}

#endif

std::optional<double> StepPeakDeviceMiB(int index, const std::function<void()>& work,
                                        const std::function<void()>& sync, std::string* why_not) {
  if (sync) sync();  // nothing of earlier work still allocating
  if (!ResetDeviceMemoryPeaks(index, why_not)) return std::nullopt;
  const std::optional<DeviceMemory> before = ReadDeviceMemory(index, why_not);
  if (!before) return std::nullopt;
  work();
  if (sync) sync();
  const std::optional<DeviceMemory> after = ReadDeviceMemory(index, why_not);
  if (!after) return std::nullopt;
  return after->peak_allocated_mb - before->allocated_mb;
}

}  // namespace benchfleet::worker
