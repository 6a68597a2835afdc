#include "worker/measure/quantile_interval.h"

#include <algorithm>
#include <cmath>

namespace benchfleet::worker {
namespace {

// The standard normal's 1 - (1 - kIntervalConfidence) / 2 quantile.
constexpr double kZ = 1.959963984540054;
constexpr double kTailProbability = (1 - kIntervalConfidence) / 2;

// 1-based ranks [j, k] for independent samples, or nullopt when either falls outside
// [1, n].
struct Ranks {
  double low = 0;
  double high = 0;
};

std::optional<Ranks> IndependentRanks(std::size_t count, double q) {
  const auto n = static_cast<double>(count);
  if (count > kExactBinomialMaxSamples) {
    const double spread = kZ * std::sqrt(n * q * (1 - q));
    return Ranks{std::floor(n * q - spread), std::ceil(n * q + 1 + spread)};
  }
  // P(B <= i) for B ~ Binomial(n, q), summed in order from log-space terms.
  const double log_q = std::log(q);
  const double log_not_q = std::log1p(-q);
  const double log_n_factorial = std::lgamma(n + 1);
  double cdf = 0;
  std::optional<double> low;   // largest j with P(B <= j - 1) <= tail
  std::optional<double> high;  // smallest k with P(B >= k) <= tail
  for (std::size_t i = 0; i <= count; ++i) {
    const auto x = static_cast<double>(i);
    cdf += std::exp(log_n_factorial - std::lgamma(x + 1) - std::lgamma(n - x + 1) + x * log_q +
                    (n - x) * log_not_q);
    // cdf is now P(B <= i): j = i + 1 qualifies while it stays within the tail.
    if (cdf <= kTailProbability) low = x + 1;
    // P(B >= i + 1) = 1 - cdf: k = i + 1 is the first to bring it within the tail.
    if (!high && 1 - cdf <= kTailProbability) high = x + 1;
  }
  if (!low || !high || *high > n) return std::nullopt;
  return Ranks{*low, *high};
}

}  // namespace

double SerialVarianceFactor(const std::vector<double>& in_order, double quantile_value) {
  const std::size_t n = in_order.size();
  if (n < 4) return 1;
  std::vector<double> indicator(n);
  double mean = 0;
  for (std::size_t t = 0; t < n; ++t) {
    const double x = in_order[t];
    indicator[t] = x < quantile_value ? 1.0 : x == quantile_value ? 0.5 : 0.0;
    mean += indicator[t];
  }
  mean /= static_cast<double>(n);
  double c0 = 0;
  for (double& v : indicator) {
    v -= mean;
    c0 += v * v;
  }
  if (c0 <= 0) return 1;
  auto rho = [&](std::size_t lag) {
    double sum = 0;
    for (std::size_t t = 0; t + lag < n; ++t) sum += indicator[t] * indicator[t + lag];
    return sum / c0;
  };
  // Geyer's initial positive sequence: tau = -1 + 2 * sum over m of
  // (rho_2m + rho_2m+1), while each pair's sum stays positive.
  const std::size_t max_lag = std::min(kMaxAutocorrelationLag, n / 4);
  double tau = -1;
  for (std::size_t lag = 0; lag + 1 <= max_lag; lag += 2) {
    const double pair = (lag == 0 ? 1.0 : rho(lag)) + rho(lag + 1);
    if (pair <= 0) break;
    tau += 2 * pair;
  }
  return std::max(1.0, tau);
}

std::optional<QuantileInterval> QuantileConfidenceInterval(const std::vector<double>& sorted,
                                                           double q, double variance_factor) {
  const std::size_t n = sorted.size();
  if (n == 0 || !(q > 0 && q < 1)) return std::nullopt;
  const std::optional<Ranks> independent = IndependentRanks(n, q);
  if (!independent) return std::nullopt;
  Ranks ranks = *independent;
  const double widen = std::sqrt(std::max(1.0, variance_factor));
  if (widen > 1) {
    // Away from the quantile's own rank by sqrt(tau); the slack keeps a factor of
    // exactly 1 from moving a rank by rounding.
    const double centre = q * static_cast<double>(n + 1);
    constexpr double kSlack = 1e-9;
    ranks.low = std::floor(centre - (centre - ranks.low) * widen + kSlack);
    ranks.high = std::ceil(centre + (ranks.high - centre) * widen - kSlack);
  }
  if (ranks.low < 1 || ranks.high > static_cast<double>(n) || ranks.low > ranks.high) {
    return std::nullopt;
  }
  QuantileInterval interval;
  interval.low_rank = static_cast<std::size_t>(ranks.low);
  interval.high_rank = static_cast<std::size_t>(ranks.high);
  interval.low = sorted[interval.low_rank - 1];
  interval.high = sorted[interval.high_rank - 1];
  return interval;
}

}  // namespace benchfleet::worker
