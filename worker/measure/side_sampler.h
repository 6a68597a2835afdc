// One workload's sampling state (sampler.h): its block size, its samples and the
// stopping rule, advanced a block at a time, so that MeasureWorkload runs one of them and
// MeasurePair (paired_sampler.h) two, their blocks alternating.
#ifndef BENCHFLEET_WORKER_MEASURE_SIDE_SAMPLER_H_
#define BENCHFLEET_WORKER_MEASURE_SIDE_SAMPLER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "worker/measure/clock.h"
#include "worker/measure/sampler.h"

namespace benchfleet::worker {

// Iterations needed for a block of min_block_s * kBlockTargetMargin when `block_iters`
// iterations took `block_s`.
std::int64_t ItersForTargetBlock(std::int64_t block_iters, double block_s, double min_block_s);

class SideSampler {
 public:
  // `agree`, when given, makes the block-size decisions every rank's (sampler.h, Agree).
  SideSampler(std::function<void()> iteration, std::function<void()> block_end,
              const TimingOptions& options, Agree agree = nullptr)
      : iteration_(std::move(iteration)),
        block_end_(std::move(block_end)),
        options_(options),
        agree_(std::move(agree)) {}

  // One warm-up iteration (waited for), timed on `clock`; returns its seconds.
  double WarmUpOnce(Clock& clock);
  // The first guess of the block size, from the last warm-up iteration's time.
  void SizeBlocks(double last_iteration_s) {
    k_ = AgreedIters(ItersForTargetBlock(1, last_iteration_s, options_.min_block_s));
  }
  // Times one block of k iterations: a sample, or, when too short to be one, a larger k
  // and the samples so far dropped (they ran at a slower pace). Returns when it ended.
  double RunBlock(Clock& clock);
  // True when this side's sampling is done by the stopping rule (sampler.h, step 3);
  // `after`: the time now; `region_start`: when sampling began. May drop the samples of
  // an earlier regime.
  bool Done(double after, double region_start);
  // The last check once sampling ended: a regime still changing drops the earlier part
  // and marks the measurement unsteady, as does too few samples to see a change.
  void Finish();

  Measurement& measurement() { return m_; }
  std::int64_t iters_per_block() const { return k_; }

 private:
  void Discard(std::size_t count);
  bool Agreed(bool decision) const { return agree_ ? agree_(decision ? 1 : 0) != 0 : decision; }
  std::int64_t AgreedIters(std::int64_t iters) const {
    return agree_ ? static_cast<std::int64_t>(agree_(static_cast<double>(iters))) : iters;
  }

  std::function<void()> iteration_;
  std::function<void()> block_end_;
  TimingOptions options_;
  Agree agree_;
  Measurement m_;
  std::int64_t k_ = 1;
  std::vector<double> block_start_s_;  // wall time each kept sample's block began
  std::size_t next_check_ = 0;
  std::vector<double> sorted_;
};

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_SIDE_SAMPLER_H_
