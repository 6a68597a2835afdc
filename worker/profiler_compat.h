// LibTorch's operator profiler, behind the one call the worker needs: its API moved
// between releases (profiler_legacy.h's RecordProfile, then profiler_kineto.h's
// enableProfiler / disableProfiler with KinetoEvents). Built and tested with Debian's
// libtorch 1.13.1 (no libkineto: the KINETO state still records CPU operators through
// RecordFunction); the same calls exist in 2.x. Include only from profile.cc.
#ifndef BENCHFLEET_WORKER_PROFILER_COMPAT_H_
#define BENCHFLEET_WORKER_PROFILER_COMPAT_H_

#include <torch/csrc/autograd/profiler_kineto.h>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "worker/profile.h"

namespace benchfleet::worker {

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
    ProfiledCall call{e.name(), e.startThreadId(), e.startUs(), e.durationUs(), {}};
    if (e.hasShapes()) {
      for (const std::vector<int64_t>& shape : e.shapes()) call.input_shapes.push_back(shape);
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_PROFILER_COMPAT_H_
