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
  auto plain = [&] {
    iteration();
    if (block_end) block_end();
  };
  double x = 1;
  const double unit_alone_s = MedianSeconds([&] { x = ExtraWorkUnit(x); }, clock);
  const double iteration_guess_s = MedianSeconds(plain, clock);
  // A unit right after the model's kernels costs more than alone (the core runs wide
  // vector code at a lower clock, and the unit inherits it): measured on the 2-vCPU Xeon,
  // a 5% dial sized from the unit alone slowed the mlp by 8%. So the units are sized in
  // place: blocks of the plain iteration and of the iteration with a trial number of
  // units alternate, a unit's cost the median over adjacent pairs of blocks of their
  // difference (a slow moment of the host falls on both blocks of a pair) over the trial
  // units. The trial is twice the units the fraction needs alone, the difference it makes
  // well above what two adjacent blocks differ by.
  const int64_t trial = std::max<int64_t>(
      1, std::llround(2 * fraction * iteration_guess_s / std::max(unit_alone_s, 1e-12)));
  auto with_trial = [&] {
    plain();
    for (int64_t i = 0; i < trial; ++i) x = ExtraWorkUnit(x);
  };
  std::vector<double> plain_s, differences_s;
  int64_t k = 1;
  const double start = clock.WallSeconds();
  while (plain_s.size() < 9 || clock.WallSeconds() - start < kExtraWorkPairedCalibrationS) {
    double block[2];
    for (int side = 0; side < 2; ++side) {
      const double before = clock.WallSeconds();
      for (int64_t i = 0; i < k; ++i) {
        if (side == 0) {
          plain();
        } else {
          with_trial();
        }
      }
      block[side] = clock.WallSeconds() - before;
    }
    if (block[0] < kMinBlockSeconds) {
      k *= 2;
      continue;
    }
    plain_s.push_back(block[0] / static_cast<double>(k));
    differences_s.push_back((block[1] - block[0]) / static_cast<double>(k));
    if (plain_s.size() > 10000) break;
  }
  g_extra_work_sink.store(x, std::memory_order_relaxed);
  std::sort(plain_s.begin(), plain_s.end());
  std::sort(differences_s.begin(), differences_s.end());
  const double iteration_s = plain_s[plain_s.size() / 2];
  const double in_place_s = differences_s[differences_s.size() / 2] / static_cast<double>(trial);
  // A difference lost in the noise: the unit's own time is the better guess.
  const double unit_s = in_place_s > 0.5 * unit_alone_s ? in_place_s : unit_alone_s;
  extra.iteration_ms_ = iteration_s * 1e3;
  extra.unit_ns_ = unit_s * 1e9;
  extra.unit_alone_ns_ = unit_alone_s * 1e9;
  extra.units_ = std::max<int64_t>(1, std::llround(fraction * iteration_s / unit_s));
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
          {"unit_alone_ns", unit_alone_ns_},
          {"iteration_ms", iteration_ms_}};
}

}  // namespace benchfleet::worker
