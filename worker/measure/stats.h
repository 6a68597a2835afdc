#ifndef BENCHFLEET_WORKER_MEASURE_STATS_H_
#define BENCHFLEET_WORKER_MEASURE_STATS_H_

#include <cstddef>
#include <optional>
#include <vector>

namespace benchfleet::worker {

// Fewer samples than this say too little to call a result precise, whatever
// its interval.
inline constexpr std::size_t kMinSamples = 10;

// Summary of per-iteration times, all in milliseconds.
struct SampleStats {
  std::size_t n = 0;
  double median_ms = 0;
  double mean_ms = 0;
  double stdev_ms = 0;  // sample standard deviation (n - 1 in the denominator)
  double min_ms = 0;
  double max_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  double q1_ms = 0;
  double q3_ms = 0;
  double iqr_ms = 0;
  // The kIntervalConfidence interval of the median and of p99 (quantile_interval.h);
  // nullopt where n does not allow one.
  std::optional<double> median_ci_low_ms, median_ci_high_ms;
  std::optional<double> p99_ci_low_ms, p99_ci_high_ms;
  // The median's serial variance factor tau (>= 1): n / tau independent samples
  // would pin the median as precisely as these n do.
  double variance_factor = 1;
  double effective_n = 0;
  // Half the median's interval over the median; nullopt without an interval.
  std::optional<double> median_ci_relative;
  // True when the median's interval is wider than target_ci of it on either
  // side (half-width / median > target_ci), when there is none, or when there
  // are fewer than kMinSamples samples: the median is not known to target_ci.
  bool noisy = true;
};

// Quantile q in [0, 1] of ascending `sorted` by linear interpolation between
// the two nearest ranks (numpy's default method). `sorted` must not be empty.
double Quantile(const std::vector<double>& sorted, double q);

// IQR divided by the median of `sorted` (ascending, non-empty). Zero spread is
// 0; a positive spread around a zero median is infinity.
double RelativeIqr(const std::vector<double>& sorted);

// Half the median's confidence interval over the median of `in_order` (samples
// in the order taken), ascending copy `sorted`; nullopt without an interval.
std::optional<double> MedianIntervalRelative(const std::vector<double>& in_order,
                                             const std::vector<double>& sorted);

// Summarises `samples_ms`, in the order taken (the interval depends on it). An
// empty input gives n = 0 and noisy = true.
SampleStats Summarize(const std::vector<double>& samples_ms, double target_ci);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_STATS_H_
