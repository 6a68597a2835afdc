#include "worker/measure/sampler.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "worker/measure/stats.h"
#include "worker/measure/steady_state.h"

namespace benchfleet::worker {
namespace {

// Runs `count` iterations and waits for the work they queued (block_end), so the
// clock read after it sees the work done, not merely submitted.
void RunBlock(const std::function<void()>& iteration, std::int64_t count,
              const std::function<void()>& block_end) {
  for (std::int64_t i = 0; i < count; ++i) iteration();
  if (block_end) block_end();
}

// Iterations needed for a block of min_block_s * kBlockTargetMargin when
// `block_iters` iterations took `block_s`.
std::int64_t ItersForTargetBlock(std::int64_t block_iters, double block_s, double min_block_s) {
  if (block_s <= 0) return std::min(block_iters * 2, kMaxItersPerSample);
  const double wanted =
      std::ceil(static_cast<double>(block_iters) * min_block_s * kBlockTargetMargin / block_s);
  return static_cast<std::int64_t>(
      std::clamp(wanted, 1.0, static_cast<double>(kMaxItersPerSample)));
}

}  // namespace

Measurement MeasureWorkload(const std::function<void()>& iteration, const TimingOptions& options,
                            Clock& clock, const std::function<void()>& block_end,
                            const Agree& agree,
                            const std::function<void(bool start)>& region_edge) {
  Measurement m;
  auto agreed = [&](bool decision) { return agree ? agree(decision ? 1 : 0) != 0 : decision; };
  auto agreed_iters = [&](std::int64_t iters) {
    return agree ? static_cast<std::int64_t>(agree(static_cast<double>(iters))) : iters;
  };

  // Warm-up; the last iteration's duration gives the first guess of the
  // block size.
  const double warmup_start = clock.WallSeconds();
  double last_iteration_s = 0;
  double now = warmup_start;
  do {
    // After an agreement (a collective call of its own) the clock is read again.
    const double before = agree ? clock.WallSeconds() : now;
    RunBlock(iteration, 1, block_end);
    now = clock.WallSeconds();
    last_iteration_s = now - before;
    ++m.warmup_iterations;
  } while (agreed(now - warmup_start < options.warmup_s));
  m.warmup_s = now - warmup_start;

  // Sampling. The first blocks also confirm the block size: one warm-up
  // iteration can be slow for reasons of its own (a cold cache, a page
  // fault, a preemption), so the guess it gives is checked against a block
  // of k before any sample counts.
  std::int64_t k = agreed_iters(ItersForTargetBlock(1, last_iteration_s, options.min_block_s));
  const double region_wall_start = clock.WallSeconds();
  const double region_cpu_start = clock.ProcessCpuSeconds();
  const std::optional<HostCpuTimes> host_start = clock.HostCpu();
  if (region_edge) region_edge(true);
  std::vector<double> block_start_s;  // wall time each kept sample's block began
  std::size_t next_check = 0;
  std::vector<double> sorted;
  // Moves the first `count` kept samples to the discarded ones.
  auto discard = [&](std::size_t count) {
    m.discarded_samples_ms.insert(m.discarded_samples_ms.end(), m.samples_ms.begin(),
                                  m.samples_ms.begin() + static_cast<std::ptrdiff_t>(count));
    m.samples_ms.erase(m.samples_ms.begin(),
                       m.samples_ms.begin() + static_cast<std::ptrdiff_t>(count));
    block_start_s.erase(block_start_s.begin(),
                        block_start_s.begin() + static_cast<std::ptrdiff_t>(count));
    next_check = 0;
  };
  // True when sampling is done; may drop samples of an earlier regime.
  auto done_sampling = [&](double after) {
    const std::size_t n = m.samples_ms.size();
    // The time is up, but never without a sample: a speed-up at the very end (a block
    // now too short, so every sample of the slower pace dropped) samples once more at
    // the new block size instead of reporting nothing.
    if (after - region_wall_start >= options.max_time_s) return n > 0;
    if (n == 0 || after - block_start_s.front() < options.min_time_s || n < kMinSamples ||
        n < kSamplesToSeeRegimeChange || n < next_check) {
      return false;
    }
    next_check = n + std::max<std::size_t>(1, n / kConvergenceCheckDivisor);
    if (const std::optional<std::size_t> change = FindRegimeChange(m.samples_ms)) {
      discard(*change);
      return false;
    }
    sorted = m.samples_ms;
    std::sort(sorted.begin(), sorted.end());
    const std::optional<double> precision = MedianIntervalRelative(m.samples_ms, sorted);
    return precision && *precision <= options.target_ci;
  };
  for (;;) {
    const double before = clock.WallSeconds();
    RunBlock(iteration, k, block_end);
    const double after = clock.WallSeconds();
    m.timed_iterations += k;
    const double block_s = after - before;
    if (agreed(block_s < options.min_block_s && k < kMaxItersPerSample)) {
      // Too short to be a sample: everything so far ran at a slower pace.
      discard(m.samples_ms.size());
      k = agreed_iters(
          std::min(std::max(k * 2, ItersForTargetBlock(k, block_s, options.min_block_s)),
                   kMaxItersPerSample));
    } else {
      m.samples_ms.push_back(block_s * 1e3 / static_cast<double>(k));
      block_start_s.push_back(before);
    }
    if (agreed(done_sampling(after))) break;
  }
  m.iters_per_sample = k;
  if (region_edge) region_edge(false);
  m.timed_s = clock.WallSeconds() - region_wall_start;
  m.cpu_s = clock.ProcessCpuSeconds() - region_cpu_start;
  if (const std::optional<HostCpuTimes> host_end = clock.HostCpu(); host_start && host_end) {
    m.host_load = ComputeHostLoad(*host_start, *host_end, m.cpu_s, m.timed_s);
  }
  m.effective_threads = m.timed_s > 0 ? m.cpu_s / m.timed_s : 0;

  // The time ran out: what is kept must still be one regime, and it must be
  // long enough to have been checked for a change at all. A slow workload
  // that fits fewer than kSamplesToSeeRegimeChange blocks into max_time_s
  // may mix two paces unseen (a GEMM whose first second runs slower), so it
  // is not reported as steady.
  if (const std::optional<std::size_t> change = FindRegimeChange(m.samples_ms)) {
    discard(*change);
    m.unsteady = true;
  }
  if (m.samples_ms.size() < kSamplesToSeeRegimeChange) m.unsteady = true;
  return m;
}

}  // namespace benchfleet::worker
