// LibTorch's operator profiler, behind the one call the worker needs: its API moved
// between releases (profiler_legacy.h's RecordProfile, then profiler_kineto.h's
// enableProfiler / disableProfiler with KinetoEvents). Built and tested with Debian's
// libtorch 1.13.1 (no libkineto: the KINETO state still records CPU operators through
// RecordFunction); the same calls exist in 2.x, where only the event's time accessors
// changed (microseconds became nanoseconds; handled below). Include only from profile.cc.
#ifndef BENCHFLEET_WORKER_MEASURE_PROFILER_COMPAT_H_
#define BENCHFLEET_WORKER_MEASURE_PROFILER_COMPAT_H_

#include <torch/csrc/autograd/profiler_kineto.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "worker/measure/profile.h"

namespace benchfleet::worker {
namespace profiler_compat {

// A KinetoEvent's start and duration in microseconds: 1.13 has startUs()/durationUs(),
// 2.x only the nanosecond accessors (the overload taking int is preferred where it
// compiles).
template <typename Event>
auto StartUs(const Event& e, int) -> decltype(static_cast<uint64_t>(e.startNs())) {
  return static_cast<uint64_t>(e.startNs()) / 1000;
}
template <typename Event>
uint64_t StartUs(const Event& e, long) {
  return static_cast<uint64_t>(e.startUs());
}
template <typename Event>
auto DurationUs(const Event& e, int) -> decltype(static_cast<uint64_t>(e.durationNs())) {
  return static_cast<uint64_t>(e.durationNs()) / 1000;
}
template <typename Event>
uint64_t DurationUs(const Event& e, long) {
  return static_cast<uint64_t>(e.durationUs());
}

// The same in fractional microseconds, for a kernel's device time: many kernels take less
// than one.
template <typename Event>
auto DurationUsExact(const Event& e, int) -> decltype(static_cast<double>(e.durationNs())) {
  return static_cast<double>(e.durationNs()) / 1000.0;
}
template <typename Event>
double DurationUsExact(const Event& e, long) {
  return static_cast<double>(e.durationUs());
}

}  // namespace profiler_compat

// Runs `work` with the profiler recording every operator call (and its input shapes);
// with `device`, the CUDA activity too (Kineto's: each kernel and copy with its device
// time), each kernel's time added to the operator call that launched it (the profiler
// links the two by correlation id, as torch.profiler's own tables do).
inline std::vector<ProfiledCall> RecordOperatorCalls(const std::function<void()>& work,
                                                     bool device = false) {
  namespace profiler = torch::autograd::profiler;
  const profiler::ProfilerConfig config(profiler::ProfilerState::KINETO,
                                        /*report_input_shapes=*/true,
                                        /*profile_memory=*/false, /*with_stack=*/false,
                                        /*with_flops=*/false, /*with_modules=*/false);
  std::set<profiler::ActivityType> activities = {profiler::ActivityType::CPU};
  if (device) activities.insert(profiler::ActivityType::CUDA);
  profiler::prepareProfiler(config, activities);
  profiler::enableProfiler(config, activities);
  try {
    work();
  } catch (...) {
    profiler::disableProfiler();
    throw;
  }
  const std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
  std::vector<ProfiledCall> calls;
  std::map<uint64_t, size_t> by_correlation;  // an operator call's correlation id -> its index
  for (const profiler::KinetoEvent& e : result->events()) {
    if (e.deviceType() != c10::DeviceType::CPU) continue;
    // A CUDA runtime call (cudaLaunchKernel) is the host side of a kernel, linked to the
    // operator that made it: not an operator of its own.
    if (device && e.linkedCorrelationId() > 0) continue;
    ProfiledCall call{e.name(),
                      e.startThreadId(),
                      profiler_compat::StartUs(e, 0),
                      profiler_compat::DurationUs(e, 0),
                      {},
                      0};
    if (e.hasShapes()) {
      for (const std::vector<int64_t>& shape : e.shapes()) call.input_shapes.push_back(shape);
    }
    if (e.correlationId() > 0) by_correlation[e.correlationId()] = calls.size();
    calls.push_back(std::move(call));
  }
  if (device) {
    for (const profiler::KinetoEvent& e : result->events()) {
      if (e.deviceType() == c10::DeviceType::CPU) continue;
      const auto call = by_correlation.find(e.linkedCorrelationId());
      if (call == by_correlation.end()) continue;  // no operator of ours launched it
      calls[call->second].device_us += profiler_compat::DurationUsExact(e, 0);
    }
  }
  return calls;
}

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_PROFILER_COMPAT_H_
