#ifndef BENCHFLEET_WORKER_MEASURE_SAMPLER_H_
#define BENCHFLEET_WORKER_MEASURE_SAMPLER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "worker/measure/clock.h"
#include "worker/measure/host_load.h"

namespace benchfleet::worker {

// A timed block runs several iterations when one is shorter than this, so
// that reading the clock (tens of nanoseconds) stays negligible per sample.
inline constexpr double kMinBlockSeconds = 1e-3;
// The same on a GPU, where each block starts on an idle device and ends in a
// device-wide synchronise: the first launch's latency and the synchronise's
// return (about 5-20 us together) would bias a 1 ms block by 1-2%, a 10 ms
// block by at most 0.2%.
inline constexpr double kMinGpuBlockSeconds = 10e-3;

// The calibrated block aims this much above the minimum block so that ordinary
// jitter rarely pushes a block under it.
inline constexpr double kBlockTargetMargin = 1.2;

// Upper bound on iterations per block; only reachable by a workload that
// takes (almost) no time, and keeps calibration finite for it.
inline constexpr std::int64_t kMaxItersPerSample = std::int64_t{1} << 24;

// Once the stopping rule could hold, it is re-checked after the sample count
// grows by n / kConvergenceCheckDivisor, keeping the sorting cost per sample
// logarithmic instead of linear.
inline constexpr std::size_t kConvergenceCheckDivisor = 16;

struct TimingOptions {
  double warmup_s = 0;    // run untimed iterations for at least this long
  double min_time_s = 0;  // sample at least this long ...
  double max_time_s = 0;  // ... and never longer than this
  // stop early once the median's confidence interval is within this fraction
  // of it (half-width / median, quantile_interval.h)
  double target_ci = 0;
  // every sample is a block of at least this long (kMinBlockSeconds, or
  // kMinGpuBlockSeconds for a GPU workload)
  double min_block_s = kMinBlockSeconds;
};

struct Measurement {
  // Per-iteration time of each block of the final, steady regime, in order.
  std::vector<double> samples_ms;
  // Samples dropped because a later regime replaced theirs (a step or trend
  // in the series, or blocks that became shorter than the minimum block), in
  // the order taken.
  std::vector<double> discarded_samples_ms;
  // True when sampling hit max_time_s while samples_ms still changed regime,
  // or with fewer than kSamplesToSeeRegimeChange samples kept (too few to
  // test for a change, whether or not one was dropped); samples_ms then
  // holds only the last regime found.
  bool unsteady = false;
  std::int64_t iters_per_sample = 1;
  std::int64_t warmup_iterations = 0;
  double warmup_s = 0;                // wall time actually spent warming up
  std::int64_t timed_iterations = 0;  // iterations run in the sampling region, kept or not
  double timed_s = 0;                 // wall time of the sampling region
  double cpu_s = 0;                   // process CPU time during the sampling region
  double effective_threads = 0;       // cpu_s / timed_s
  // What the rest of the host did during the sampling region (Clock::HostCpu
  // read at its start and end, less cpu_s); nullopt where the clock does not
  // know the host's CPU time.
  std::optional<HostLoad> host_load;
};

// Ranks that time one collective together must take every decision together (end the
// warm-up, size a block, stop sampling), or one would wait forever in a call the
// others never make. `agree` is given this rank's value of a decision and returns the
// one every rank uses (rank 0's); it runs between blocks, never in the timed region.
using Agree = std::function<double(double)>;

// Measures `iteration` (one unit of work, e.g. one forward pass):
//  1. warm-up: runs it until options.warmup_s has passed, at least once;
//  2. block size: picks k iterations per sample so a block lasts at least
//     options.min_block_s, from the last warm-up iteration, and confirms it by
//     timing a block of k: a shorter block grows k and is not a sample. A
//     sampled block that is shorter (the workload sped up) grows k and drops
//     the samples before it, so every sample is a block of >= min_block_s;
//  3. sampling: times blocks of k, each sample being block time / k. At
//     each check, a change of regime (FindRegimeChange) drops the samples
//     before it; sampling stops when the samples kept span >= min_time_s,
//     n >= max(kMinSamples, kSamplesToSeeRegimeChange), no change is found
//     and the median's 95% confidence interval has a half-width of at most
//     target_ci x median (MedianIntervalRelative), or when elapsed >= max_time_s, where a
//     change still found drops the earlier part and sets `unsteady`.
//     max_time_s is a hard cap: a workload slower than
//     max_time_s / kSamplesToSeeRegimeChange ends with fewer samples and is
//     `unsteady`, since no change could have been seen in so few.
// `block_end`, when given, runs after every block (and warm-up iteration) before
// the clock is read: a GPU workload waits there for its queued kernels.
// `agree`, when given, makes every decision the same on all ranks (see Agree).
// `region_edge`, when given, runs just after the sampling region starts (true) and just
// before it ends (false), outside any block: counters read there (energy) cover exactly
// the timed_iterations.
// Requires positive times and min_time_s <= max_time_s.
Measurement MeasureWorkload(const std::function<void()>& iteration, const TimingOptions& options,
                            Clock& clock, const std::function<void()>& block_end = nullptr,
                            const Agree& agree = nullptr,
                            const std::function<void(bool start)>& region_edge = nullptr);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_SAMPLER_H_
