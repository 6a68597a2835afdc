#ifndef BENCHFLEET_WORKER_STATS_H_
#define BENCHFLEET_WORKER_STATS_H_

#include <cstddef>
#include <vector>

namespace benchfleet::worker {

// Fewer samples than this say too little about the spread to call a result
// quiet, whatever their IQR.
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
  // True when iqr/median >= target_iqr, or when there are fewer than
  // kMinSamples samples.
  bool noisy = true;
};

// Quantile q in [0, 1] of ascending `sorted` by linear interpolation between
// the two nearest ranks (numpy's default method). `sorted` must not be empty.
double Quantile(const std::vector<double>& sorted, double q);

// IQR divided by the median of `sorted` (ascending, non-empty). Zero spread is
// 0; a positive spread around a zero median is infinity.
double RelativeIqr(const std::vector<double>& sorted);

// Summarises `samples_ms` (any order). An empty input gives n = 0 and
// noisy = true.
SampleStats Summarize(std::vector<double> samples_ms, double target_iqr);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_STATS_H_
