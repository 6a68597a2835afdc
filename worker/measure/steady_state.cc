#include "worker/measure/steady_state.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "worker/measure/stats.h"

namespace benchfleet::worker {
namespace {

// Median and IQR of samples[begin, end).
struct Spread {
  double median = 0;
  double iqr = 0;
};

Spread SpreadOf(const std::vector<double>& samples, std::size_t begin, std::size_t end) {
  std::vector<double> part(samples.begin() + static_cast<std::ptrdiff_t>(begin),
                           samples.begin() + static_cast<std::ptrdiff_t>(end));
  std::sort(part.begin(), part.end());
  return {Quantile(part, 0.5), Quantile(part, 0.75) - Quantile(part, 0.25)};
}

}  // namespace

std::optional<std::size_t> FindRegimeChange(const std::vector<double>& samples) {
  const std::size_t n = samples.size();
  if (n < 2 * kRegimeMinSamples) return std::nullopt;

  // Mid-ranks (ties share the mean of their ranks) and the tie correction
  // sum(t^3 - t) of the rank-sum variance.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return samples[a] < samples[b]; });
  std::vector<double> rank(n);
  double ties = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j + 1 < n && samples[order[j + 1]] == samples[order[i]]) ++j;
    const double mid_rank = static_cast<double>(i + j) / 2 + 1;
    for (std::size_t t = i; t <= j; ++t) rank[order[t]] = mid_rank;
    const auto t = static_cast<double>(j - i + 1);
    ties += t * t * t - t;
    i = j + 1;
  }

  // Rank sum of the first i samples, for every i at once.
  const auto total = static_cast<double>(n);
  const double variance_factor = (total + 1) - ties / (total * (total - 1));
  double rank_sum = 0;
  double best_z = 0;
  std::size_t best_split = 0;
  for (std::size_t i = 0; i + kRegimeMinSamples <= n; ++i) {
    if (i >= kRegimeMinSamples) {
      const auto before = static_cast<double>(i);
      const double after = total - before;
      const double u = rank_sum - before * (before + 1) / 2;
      const double variance = before * after / 12 * variance_factor;
      if (variance > 0) {
        const double z = std::abs(u - before * after / 2) / std::sqrt(variance);
        if (z > best_z) {
          best_z = z;
          best_split = i;
        }
      }
    }
    rank_sum += rank[i];
  }
  if (best_z < kRegimeChangeMinZ) return std::nullopt;

  const Spread all = SpreadOf(samples, 0, n);
  const Spread before = SpreadOf(samples, 0, best_split);
  const Spread after = SpreadOf(samples, best_split, n);
  const double shift = std::abs(after.median - before.median);
  if (shift < kRegimeMinRelativeShift * all.median) return std::nullopt;
  if (shift < kRegimeMinShiftOverIqr * std::max(before.iqr, after.iqr)) return std::nullopt;
  return best_split;
}

}  // namespace benchfleet::worker
