#include "worker/sampler.h"

#include <algorithm>
#include <cmath>

#include "worker/stats.h"

namespace benchfleet::worker {
namespace {

// Runs `count` iterations and waits for the work they queued (block_end), so the
// clock read after it sees the work done, not merely submitted.
void RunBlock(const std::function<void()>& iteration, std::int64_t count,
              const std::function<void()>& block_end) {
  for (std::int64_t i = 0; i < count; ++i) iteration();
  if (block_end) block_end();
}

// Iterations needed for a block of kMinBlockSeconds * kBlockTargetMargin when
// `block_iters` iterations took `block_s`.
std::int64_t ItersForTargetBlock(std::int64_t block_iters, double block_s) {
  if (block_s <= 0) return std::min(block_iters * 2, kMaxItersPerSample);
  const double wanted =
      std::ceil(static_cast<double>(block_iters) * kMinBlockSeconds * kBlockTargetMargin / block_s);
  return static_cast<std::int64_t>(
      std::clamp(wanted, 1.0, static_cast<double>(kMaxItersPerSample)));
}

}  // namespace

Measurement MeasureWorkload(const std::function<void()>& iteration, const TimingOptions& options,
                            Clock& clock, const std::function<void()>& block_end) {
  Measurement m;

  // Warm-up; the last iteration's duration seeds the block size.
  const double warmup_start = clock.WallSeconds();
  double last_iteration_s = 0;
  double now = warmup_start;
  do {
    const double before = now;
    RunBlock(iteration, 1, block_end);
    now = clock.WallSeconds();
    last_iteration_s = now - before;
    ++m.warmup_iterations;
  } while (now - warmup_start < options.warmup_s);
  m.warmup_s = now - warmup_start;

  // Block size. A block of the first guess is timed (and discarded) until one
  // reaches kMinBlockSeconds; slow workloads skip this entirely.
  std::int64_t k = 1;
  if (last_iteration_s < kMinBlockSeconds) {
    k = ItersForTargetBlock(1, last_iteration_s);
    while (k < kMaxItersPerSample) {
      const double before = clock.WallSeconds();
      RunBlock(iteration, k, block_end);
      const double block_s = clock.WallSeconds() - before;
      if (block_s >= kMinBlockSeconds) break;
      k = std::max(k * 2, ItersForTargetBlock(k, block_s));
      k = std::min(k, kMaxItersPerSample);
    }
  }
  m.iters_per_sample = k;

  // Sampling.
  const double region_wall_start = clock.WallSeconds();
  const double region_cpu_start = clock.ProcessCpuSeconds();
  std::size_t next_check = 0;
  std::vector<double> sorted;
  for (;;) {
    const double before = clock.WallSeconds();
    RunBlock(iteration, k, block_end);
    const double after = clock.WallSeconds();
    m.samples_ms.push_back((after - before) * 1e3 / static_cast<double>(k));

    const double elapsed = after - region_wall_start;
    if (elapsed >= options.max_time_s) break;
    const std::size_t n = m.samples_ms.size();
    if (elapsed >= options.min_time_s && n >= kMinSamples && n >= next_check) {
      sorted = m.samples_ms;
      std::sort(sorted.begin(), sorted.end());
      if (RelativeIqr(sorted) < options.target_iqr) break;
      next_check = n + std::max<std::size_t>(1, n / kConvergenceCheckDivisor);
    }
  }
  m.timed_s = clock.WallSeconds() - region_wall_start;
  m.cpu_s = clock.ProcessCpuSeconds() - region_cpu_start;
  m.effective_threads = m.timed_s > 0 ? m.cpu_s / m.timed_s : 0;
  return m;
}

}  // namespace benchfleet::worker
