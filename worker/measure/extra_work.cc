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
  // What a number of units adds is measured where it will be spent, not added up from a
  // unit's own time: after the model's kernels a unit costs more than alone (the core runs
  // wide vector code at a lower clock and the unit inherits it), and the switch between
  // the two kinds of code costs something once per iteration, whatever the units (on the
  // 2-vCPU Xeon a 5% dial sized from the unit alone slowed the mlp by 8%, and one sized
  // per unit from twice the units it needed by 7%). So blocks of the plain iteration and
  // of the iteration followed by `units` alternate, the share those units add is the median
  // of the adjacent pairs' ratios (a slow moment of the host falls on both blocks of a
  // pair), and the units are scaled by the share asked over the share measured until they
  // agree (kExtraWorkRounds at most).
  std::int64_t units = std::max<std::int64_t>(
      1, std::llround(fraction * iteration_guess_s / std::max(unit_alone_s, 1e-12)));
  double iteration_s = iteration_guess_s;
  double added = 0;                 // the share the last round's units added
  std::int64_t measured_units = 0;  // and those units
  for (int round = 0; round < kExtraWorkRounds; ++round) {
    auto with_units = [&] {
      plain();
      for (std::int64_t i = 0; i < units; ++i) x = ExtraWorkUnit(x);
    };
    std::vector<double> plain_s, ratios;
    std::int64_t k = 1;
    const double start = clock.WallSeconds();
    while (plain_s.size() < 9 || clock.WallSeconds() - start < kExtraWorkPairedCalibrationS) {
      double block[2];
      for (int side = 0; side < 2; ++side) {
        const double before = clock.WallSeconds();
        for (std::int64_t i = 0; i < k; ++i) {
          if (side == 0) {
            plain();
          } else {
            with_units();
          }
        }
        block[side] = clock.WallSeconds() - before;
      }
      if (block[0] < kMinBlockSeconds) {
        k *= 2;
        continue;
      }
      plain_s.push_back(block[0] / static_cast<double>(k));
      ratios.push_back(block[1] / block[0]);
      if (plain_s.size() > 10000) break;
    }
    std::sort(plain_s.begin(), plain_s.end());
    std::sort(ratios.begin(), ratios.end());
    iteration_s = plain_s[plain_s.size() / 2];
    added = ratios[ratios.size() / 2] - 1;
    measured_units = units;
    // Lost in the noise (a share this small cannot be told from two blocks' difference):
    // more units next round, up to what the unit alone would say.
    const std::int64_t next =
        added > fraction / 8
            ? std::max<std::int64_t>(1, std::llround(static_cast<double>(units) * fraction / added))
            : 2 * units;
    const bool agreed = std::llabs(next - units) <= std::max<std::int64_t>(1, units / 50);
    units = next;
    if (agreed) break;
  }
  g_extra_work_sink.store(x, std::memory_order_relaxed);
  extra.iteration_ms_ = iteration_s * 1e3;
  extra.unit_ns_ = added > 0 ? added * iteration_s / static_cast<double>(measured_units) * 1e9
                             : unit_alone_s * 1e9;
  extra.unit_alone_ns_ = unit_alone_s * 1e9;
  extra.units_ = units;
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
