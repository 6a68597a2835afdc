#include "worker/measure/extra_work.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "worker/measure/sampler.h"

namespace benchfleet::worker {
namespace {

// Where each unit's chain ends, so that the compiler keeps every one of them.
std::atomic<double> g_extra_work_sink{0};

// The median time of one call of `work` over blocks of at least kMinBlockSeconds, for
// at least kExtraWorkCalibrationS in all.
double MedianSeconds(const std::function<void()>& work, Clock& clock) {
  std::int64_t k = 1;
  std::vector<double> per_call;
  const double start = clock.WallSeconds();
  while (per_call.size() < 5 || clock.WallSeconds() - start < kExtraWorkCalibrationS) {
    const double before = clock.WallSeconds();
    for (std::int64_t i = 0; i < k; ++i) work();
    const double block = clock.WallSeconds() - before;
    if (block < kMinBlockSeconds) {
      k *= 2;
      continue;
    }
    per_call.push_back(block / static_cast<double>(k));
    if (per_call.size() > 10000) break;
  }
  std::sort(per_call.begin(), per_call.end());
  return per_call[per_call.size() / 2];
}

}  // namespace

double ExtraWorkUnit(double x) {
  for (int i = 0; i < kExtraWorkUnitSteps; ++i) {
    x = x * 0.9999999 + 1e-9;
    asm volatile("" : "+x"(x));  // one step after the other: no folding, no vectorizing
  }
  return x;
}

ExtraWork ExtraWork::Calibrate(const std::function<void()>& iteration,
                               const std::function<void()>& block_end, double fraction,
                               Clock& clock) {
  ExtraWork extra;
  extra.fraction_ = fraction;
  if (!(fraction > 0)) return extra;
  const double iteration_s = MedianSeconds(
      [&] {
        iteration();
        if (block_end) block_end();
      },
      clock);
  double x = 1;
  const double unit_s = MedianSeconds([&] { x = ExtraWorkUnit(x); }, clock);
  g_extra_work_sink.store(x, std::memory_order_relaxed);
  extra.iteration_ms_ = iteration_s * 1e3;
  extra.unit_ns_ = unit_s * 1e9;
  extra.units_ =
      unit_s > 0 ? std::max<std::int64_t>(1, std::llround(fraction * iteration_s / unit_s)) : 0;
  return extra;
}

std::function<void()> ExtraWork::Wrap(std::function<void()> iteration) const {
  if (units_ == 0) return iteration;
  const std::int64_t units = units_;
  return [iteration = std::move(iteration), units] {
    iteration();
    double x = 1;
    for (std::int64_t i = 0; i < units; ++i) x = ExtraWorkUnit(x);
    g_extra_work_sink.store(x, std::memory_order_relaxed);
  };
}

nlohmann::json ExtraWork::Report() const {
  return {{"fraction", fraction_},
          {"units", units_},
          {"unit_ns", unit_ns_},
          {"iteration_ms", iteration_ms_}};
}

}  // namespace benchfleet::worker
