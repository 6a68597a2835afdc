#include "worker/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace benchfleet::worker {

double Quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const std::size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction;
}

double RelativeIqr(const std::vector<double>& sorted) {
  const double iqr = Quantile(sorted, 0.75) - Quantile(sorted, 0.25);
  const double median = Quantile(sorted, 0.5);
  if (median > 0) return iqr / median;
  return iqr > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

SampleStats Summarize(std::vector<double> samples_ms, double target_iqr) {
  SampleStats stats;
  stats.n = samples_ms.size();
  if (samples_ms.empty()) return stats;

  std::sort(samples_ms.begin(), samples_ms.end());
  const double n = static_cast<double>(samples_ms.size());
  stats.mean_ms = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) / n;
  if (samples_ms.size() > 1) {
    double squares = 0;
    for (double x : samples_ms) squares += (x - stats.mean_ms) * (x - stats.mean_ms);
    stats.stdev_ms = std::sqrt(squares / (n - 1));
  }
  stats.min_ms = samples_ms.front();
  stats.max_ms = samples_ms.back();
  stats.median_ms = Quantile(samples_ms, 0.5);
  stats.p90_ms = Quantile(samples_ms, 0.90);
  stats.p99_ms = Quantile(samples_ms, 0.99);
  stats.q1_ms = Quantile(samples_ms, 0.25);
  stats.q3_ms = Quantile(samples_ms, 0.75);
  stats.iqr_ms = stats.q3_ms - stats.q1_ms;
  stats.noisy = stats.n < kMinSamples || RelativeIqr(samples_ms) >= target_iqr;
  return stats;
}

}  // namespace benchfleet::worker
