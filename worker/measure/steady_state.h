#ifndef BENCHFLEET_WORKER_MEASURE_STEADY_STATE_H_
#define BENCHFLEET_WORKER_MEASURE_STEADY_STATE_H_

// Finds where a series of timing samples changes regime: a step (buffers
// settle, the clock changes, a neighbour starts) or a trend. The sampler
// drops what came before the change, so that no statistic mixes two regimes.
// Torch-free, so it is tested on synthetic series.

#include <cstddef>
#include <optional>
#include <vector>

namespace benchfleet::worker {

// Each side of a change needs this many samples; fewer say nothing about
// either regime.
inline constexpr std::size_t kRegimeMinSamples = 3;

// Evidence a split must reach: the Mann-Whitney rank-sum statistic of
// "before" against "after", standardised (tie-corrected normal
// approximation). Rank based, so a bimodal but stationary series (samples
// alternating between two values) shows no change, and a few outliers
// cannot fake one. Perfect separation reaches 3 with 7 samples on each side.
inline constexpr double kRegimeChangeMinZ = 3.0;

// A change must also matter: the medians on either side differ by at least
// this fraction of the overall median ...
inline constexpr double kRegimeMinRelativeShift = 0.02;
// ... and by at least this many interquartile ranges of either side, so that
// a shift smaller than the noise within a regime is not called a change
// (it moves the median by less than that noise).
inline constexpr double kRegimeMinShiftOverIqr = 1.5;

// The fewest samples in which FindRegimeChange can see any change at all: a
// perfect step at the middle (every sample before it faster, or every one
// slower, than every sample after it) must reach kRegimeChangeMinZ. With
// fewer, two regimes can hide in the series, so a measurement that ends with
// fewer is not known to be steady. The rank-sum z of a perfect split a|b is
// (ab/2) / sqrt(ab(a+b+1)/12); compared squared to stay constexpr.
constexpr std::size_t SamplesToSeeRegimeChange() {
  for (std::size_t n = 2 * kRegimeMinSamples;; ++n) {
    const double a = static_cast<double>(n / 2);
    const double b = static_cast<double>(n - n / 2);
    if (3 * a * b >= kRegimeChangeMinZ * kRegimeChangeMinZ * static_cast<double>(n + 1)) return n;
  }
}
inline constexpr std::size_t kSamplesToSeeRegimeChange = SamplesToSeeRegimeChange();

// The split of `samples` (in the order taken) into an earlier and a later
// regime: the index of the first sample of the later one, chosen where the
// rank-sum statistic is largest. nullopt when no split passes all three
// tests above, which includes every series shorter than
// 2 x kRegimeMinSamples. A linear trend shows as a change near its middle;
// dropping the earlier part and sampling on finds it again until the trend
// ends.
std::optional<std::size_t> FindRegimeChange(const std::vector<double>& samples);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_STEADY_STATE_H_
