#ifndef BENCHFLEET_WORKER_MEASURE_QUANTILE_INTERVAL_H_
#define BENCHFLEET_WORKER_MEASURE_QUANTILE_INTERVAL_H_

// How precise a median (or p99) of timing samples is: a distribution-free confidence
// interval from order statistics, widened for samples that are not independent.
// Torch-free, so it is tested on synthetic series.
//
// Why order statistics: the number of samples below the true q-quantile is
// Binomial(n, q) whatever the distribution, so [x_(j), x_(k)] covers it with a
// probability that follows from n alone (no normality, no bootstrap).
//
// Why the widening: consecutive timing blocks share a clock speed, a cache state, a
// neighbour's load, so one sample says something of the next. By the Bahadur
// representation the sample quantile moves with the mean of the indicators
// 1{x_t < quantile}; their long-run variance is tau = 1 + 2 * sum_k rho_k (rho_k the
// lag-k autocorrelation of the indicators) times that of independent ones, so the
// interval's half-width in ranks grows by sqrt(tau). tau is estimated with Geyer's
// initial positive sequence (sums of pairs of autocorrelations, stopped at the first
// pair that is not positive) and never taken below 1: negative dependence would
// narrow the interval, and we would rather report it too wide than too narrow.

#include <cstddef>
#include <optional>
#include <vector>

namespace benchfleet::worker {

// Every interval a result reports has this coverage.
inline constexpr double kIntervalConfidence = 0.95;

// Up to this many samples the ranks come from the binomial distribution itself; above,
// from its normal approximation (within one rank of it there).
inline constexpr std::size_t kExactBinomialMaxSamples = 2000;

// Lags of the autocorrelation looked at, at most: beyond a few hundred blocks (a
// few hundred ms) the estimate is noise, and the cost per check stays O(n * lag).
inline constexpr std::size_t kMaxAutocorrelationLag = 500;

// tau above for the q-quantile of `in_order` (samples in the order taken); 1 for a
// series without variation in its indicators, or shorter than 4 samples.
double SerialVarianceFactor(const std::vector<double>& in_order, double quantile_value);

struct QuantileInterval {
  double low = 0;
  double high = 0;
  std::size_t low_rank = 0;  // 1-based ranks in the sorted samples
  std::size_t high_rank = 0;
};

// The kIntervalConfidence interval of the q-quantile (0 < q < 1) of `sorted` (ascending)
// samples whose serial variance factor is `variance_factor` (>= 1): ranks j < k with
// P(B < j) <= alpha/2 and P(B >= k) <= alpha/2 for B ~ Binomial(n, q), then both moved
// away from n*q by sqrt(variance_factor). nullopt when n does not allow it: a rank would
// fall outside [1, n] (a median needs 6 independent samples, a p99 367).
std::optional<QuantileInterval> QuantileConfidenceInterval(const std::vector<double>& sorted,
                                                           double q, double variance_factor);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_QUANTILE_INTERVAL_H_
