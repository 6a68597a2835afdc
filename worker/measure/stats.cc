#include "worker/measure/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "worker/measure/quantile_interval.h"

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

namespace {

// Half-width of `interval` over `centre`; infinity around a zero centre.
double RelativeHalfWidth(const QuantileInterval& interval, double centre) {
  const double half = (interval.high - interval.low) / 2;
  if (centre > 0) return half / centre;
  return half > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

}  // namespace

std::optional<double> MedianIntervalRelative(const std::vector<double>& in_order,
                                             const std::vector<double>& sorted) {
  if (sorted.empty()) return std::nullopt;
  const double median = Quantile(sorted, 0.5);
  const auto interval =
      QuantileConfidenceInterval(sorted, 0.5, SerialVarianceFactor(in_order, median));
  if (!interval) return std::nullopt;
  return RelativeHalfWidth(*interval, median);
}

SampleStats Summarize(const std::vector<double>& in_order, double target_ci) {
  SampleStats stats;
  stats.n = in_order.size();
  if (in_order.empty()) return stats;

  std::vector<double> samples_ms = in_order;
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
  stats.variance_factor = SerialVarianceFactor(in_order, stats.median_ms);
  stats.effective_n = n / stats.variance_factor;
  if (const auto ci = QuantileConfidenceInterval(samples_ms, 0.5, stats.variance_factor)) {
    stats.median_ci_low_ms = ci->low;
    stats.median_ci_high_ms = ci->high;
    stats.median_ci_relative = RelativeHalfWidth(*ci, stats.median_ms);
  }
  constexpr double kP99 = 0.99;
  if (const auto ci = QuantileConfidenceInterval(samples_ms, kP99,
                                                 SerialVarianceFactor(in_order, stats.p99_ms))) {
    stats.p99_ci_low_ms = ci->low;
    stats.p99_ci_high_ms = ci->high;
  }
  stats.noisy =
      stats.n < kMinSamples || !stats.median_ci_relative || *stats.median_ci_relative > target_ci;
  return stats;
}

}  // namespace benchfleet::worker
