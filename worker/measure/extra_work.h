// A slowdown dialled on purpose (schemas/worker.md, Slowdown): the job's `slowdown`
// fraction of extra work after every iteration, so that a test, or a user checking what
// their comparisons can see, has a code change of known size without changing what the
// result is keyed on. The extra work is fixed arithmetic: a chain of dependent
// floating-point multiply-adds in registers, a unit of which takes the same number of
// cycles on a core whatever the memory does. How many units make the fraction is chosen
// once per process, just after the model was built, by timing the iteration with and
// without a number of units in alternating blocks until those units add the fraction,
// so an iteration of that process then does that many units more every time.
#ifndef BENCHFLEET_WORKER_MEASURE_EXTRA_WORK_H_
#define BENCHFLEET_WORKER_MEASURE_EXTRA_WORK_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>

#include "worker/measure/clock.h"

namespace benchfleet::worker {

// Steps of one unit of extra work: about 0.3 us on a 3 GHz core (4-cycle latency each).
inline constexpr int kExtraWorkUnitSteps = 256;
// The iteration is timed for at least this long, as the median of blocks of at least
// kMinBlockSeconds, before the units are chosen.
inline constexpr double kExtraWorkCalibrationS = 0.05;
// Each round of sizing: blocks with and without the round's units alternate for at
// least this long.
inline constexpr double kExtraWorkPairedCalibrationS = 0.3;
// Rounds at most (each scales the units by the share asked over the share measured).
inline constexpr int kExtraWorkRounds = 4;

class ExtraWork {
 public:
  // Times `iteration` (waited for with `block_end`) and a unit alone on `clock` for a
  // first guess, then alternates blocks of the iteration with and without the guessed
  // units and scales the units by `fraction` over the share they added, until the two
  // agree within 2% (or kExtraWorkRounds rounds).
  static ExtraWork Calibrate(const std::function<void()>& iteration,
                             const std::function<void()>& block_end, double fraction, Clock& clock);
  // `iteration` followed by this process's extra work.
  std::function<void()> Wrap(std::function<void()> iteration) const;
  // {fraction, units, unit_ns, unit_alone_ns, iteration_ms}: what was added and what it
  // was sized from.
  nlohmann::json Report() const;
  std::int64_t units() const { return units_; }

 private:
  double fraction_ = 0;
  std::int64_t units_ = 0;
  double unit_ns_ = 0;        // in place: the last round's added time over its units
  double unit_alone_ns_ = 0;  // alone
  double iteration_ms_ = 0;
};

// One unit of extra work on `x`; returns the chain's end (so it cannot be left out).
double ExtraWorkUnit(double x);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_EXTRA_WORK_H_
