#include "worker/measure/step_memory.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "worker/measure/memory_compat.h"

namespace benchfleet::worker {
namespace {

// The hook ATen's CPU allocator reports every allocation and free to while memory
// profiling is on for the thread (c10::reportMemoryUsageToProfiler). A free of memory
// allocated before it was installed is not reported, so the count starts at zero.
class PeakTracker : public c10::MemoryReportingInfoBase {
 public:
  void reportMemoryUsage(void* /*ptr*/, int64_t alloc_size,
                         memory_compat::ReportedTotal /*total_allocated*/,
                         memory_compat::ReportedTotal /*total_reserved*/,
                         c10::Device device) override {
    if (device.type() != c10::DeviceType::CPU) return;
    std::lock_guard<std::mutex> lock(mutex_);
    live_ += alloc_size;
    peak_ = std::max(peak_, live_);
  }
  bool memoryProfilingEnabled() const override { return true; }

  int64_t peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }

 private:
  std::mutex mutex_;
  int64_t live_ = 0;  // GUARDED_BY(mutex_)
  int64_t peak_ = 0;  // GUARDED_BY(mutex_)
};

}  // namespace

double PeakAllocatedMiB(const std::function<void()>& work) {
  auto tracker = std::make_shared<PeakTracker>();
  {
    c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, tracker);
    work();
  }
  return static_cast<double>(tracker->peak()) / (1024.0 * 1024.0);
}

}  // namespace benchfleet::worker
