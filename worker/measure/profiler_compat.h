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

}  // namespace profiler_compat

// Runs `work` with the profiler recording every operator call (and its input shapes).
inline std::vector<ProfiledCall> RecordOperatorCalls(const std::function<void()>& work) {
  namespace profiler = torch::autograd::profiler;
  const profiler::ProfilerConfig config(profiler::ProfilerState::KINETO,
                                        /*report_input_shapes=*/true,
                                        /*profile_memory=*/false, /*with_stack=*/false,
                                        /*with_flops=*/false, /*with_modules=*/false);
  const std::set<profiler::ActivityType> activities = {profiler::ActivityType::CPU};
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
  for (const profiler::KinetoEvent& e : result->events()) {
    if (e.deviceType() != c10::DeviceType::CPU) continue;
    ProfiledCall call{e.name(), e.startThreadId(), profiler_compat::StartUs(e, 0),
                      profiler_compat::DurationUs(e, 0), {}};
    if (e.hasShapes()) {
      for (const std::vector<int64_t>& shape : e.shapes()) call.input_shapes.push_back(shape);
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_PROFILER_COMPAT_H_
