#include "worker/measure/side_sampler.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "worker/measure/stats.h"
#include "worker/measure/steady_state.h"

namespace benchfleet::worker {

std::int64_t ItersForTargetBlock(std::int64_t block_iters, double block_s, double min_block_s) {
  if (block_s <= 0) return std::min(block_iters * 2, kMaxItersPerSample);
  const double wanted =
      std::ceil(static_cast<double>(block_iters) * min_block_s * kBlockTargetMargin / block_s);
  return static_cast<std::int64_t>(
      std::clamp(wanted, 1.0, static_cast<double>(kMaxItersPerSample)));
}

double SideSampler::WarmUpOnce(Clock& clock) {
  const double before = clock.WallSeconds();
  iteration_();
  if (block_end_) block_end_();
  const double after = clock.WallSeconds();
  ++m_.warmup_iterations;
  m_.warmup_s += after - before;
  return after - before;
}

double SideSampler::RunBlock(Clock& clock) {
  const double before = clock.WallSeconds();
  for (std::int64_t i = 0; i < k_; ++i) iteration_();
  if (block_end_) block_end_();
  const double after = clock.WallSeconds();
  m_.timed_iterations += k_;
  const double block_s = after - before;
  m_.timed_s += block_s;
  if (Agreed(block_s < options_.min_block_s && k_ < kMaxItersPerSample)) {
    // Too short to be a sample: everything so far ran at a slower pace.
    Discard(m_.samples_ms.size());
    k_ = AgreedIters(
        std::min(std::max(k_ * 2, ItersForTargetBlock(k_, block_s, options_.min_block_s)),
                 kMaxItersPerSample));
  } else {
    m_.samples_ms.push_back(block_s * 1e3 / static_cast<double>(k_));
    block_start_s_.push_back(before);
  }
  m_.iters_per_sample = k_;
  return after;
}

void SideSampler::Discard(std::size_t count) {
  m_.discarded_samples_ms.insert(m_.discarded_samples_ms.end(), m_.samples_ms.begin(),
                                 m_.samples_ms.begin() + static_cast<std::ptrdiff_t>(count));
  m_.samples_ms.erase(m_.samples_ms.begin(),
                      m_.samples_ms.begin() + static_cast<std::ptrdiff_t>(count));
  block_start_s_.erase(block_start_s_.begin(),
                       block_start_s_.begin() + static_cast<std::ptrdiff_t>(count));
  next_check_ = 0;
}

bool SideSampler::Done(double after, double region_start) {
  const std::size_t n = m_.samples_ms.size();
  // The time is up, but never without a sample: a speed-up at the very end (a block now
  // too short, so every sample of the slower pace dropped) samples once more at the new
  // block size instead of reporting nothing.
  if (after - region_start >= options_.max_time_s) return n > 0;
  if (n == 0 || after - block_start_s_.front() < options_.min_time_s || n < kMinSamples ||
      n < kSamplesToSeeRegimeChange || n < next_check_) {
    return false;
  }
  next_check_ = n + std::max<std::size_t>(1, n / kConvergenceCheckDivisor);
  if (const std::optional<std::size_t> change = FindRegimeChange(m_.samples_ms)) {
    Discard(*change);
    return false;
  }
  sorted_ = m_.samples_ms;
  std::sort(sorted_.begin(), sorted_.end());
  const std::optional<double> precision = MedianIntervalRelative(m_.samples_ms, sorted_);
  return precision && *precision <= options_.target_ci;
}

void SideSampler::Finish() {
  // The time ran out: what is kept must still be one regime, and it must be long enough
  // to have been checked for a change at all. A slow workload that fits fewer than
  // kSamplesToSeeRegimeChange blocks into max_time_s may mix two paces unseen (a GEMM
  // whose first second runs slower), so it is not reported as steady.
  if (const std::optional<std::size_t> change = FindRegimeChange(m_.samples_ms)) {
    Discard(*change);
    m_.unsteady = true;
  }
  if (m_.samples_ms.size() < kSamplesToSeeRegimeChange) m_.unsteady = true;
}

}  // namespace benchfleet::worker
