// Comparisons on the scale timings vary on: one process's pace, the host's pace and a
// code change all multiply a time, so estimates and intervals of times and of their
// ratios are taken on the log scale (a geometric mean with its interval, which never
// reaches 0 ms) and every comparison answers in one vocabulary (docs/results.md,
// Comparisons): `compare` of two sweeps (unpaired), the paired runs of a sweep's `versus`,
// the speedups of the torch, technique and dtype views, and the regression judge.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace benchfleet {

// Student's t: P(T <= t) with `df` degrees of freedom (df > 0), and its quantile.
double StudentTCdf(double t, double df);
double StudentTQuantile(double p, double df);
// The upper 97.5% point (df >= 1; +inf below): a two-sided 95% interval's factor.
double StudentT975(int64_t df);

// The geometric mean of positive values with the 95% prediction interval of the
// geometric mean of as many further ones (a repeat run of as many processes on that
// host): exp(mean log +- t(K-1) x sd of the logs x sqrt(2/K)). With one value, no
// interval.
struct GeometricSummary {
  int64_t count = 0;
  double mean = 0;                     // the geometric mean
  double sd_log = 0;                   // the standard deviation of the logs (K >= 2)
  std::optional<double> low, high;     // the prediction interval (K >= 2)
  double relative_half_width() const;  // (high - low) / 2 / mean; +inf without one
};
// Zero or negative values are left out (a time is positive).
GeometricSummary SummarizeGeometric(const std::vector<double>& values);

// B over A, from pairs (the log of each pair's B / A) or from two independent groups
// (Welch's t on the logs): the ratio of geometric means with its interval.
struct RatioEstimate {
  double ratio = 1;          // exp(the mean log ratio): above 1, B is slower
  double low = 1, high = 1;  // its two-sided interval at `confidence`
  double confidence = 0.95;
  double se_log = 0;                 // the standard error of the log ratio
  double df = 0;                     // of its t distribution (0: too few values, no interval)
  double p = 1;                      // two-sided p of "no change" (ratio 1)
  int64_t count_a = 0, count_b = 0;  // pairs: count_a = count_b = the pairs
  bool paired = false;
  bool valid() const { return df > 0; }
};
// `log_ratios`: log(B / A) of each pair; two or more give an interval.
RatioEstimate PairedRatio(const std::vector<double>& log_ratios, double confidence = 0.95);
// `a`, `b`: positive values (process medians); two or more a side give an interval.
RatioEstimate UnpairedRatio(const std::vector<double>& a, const std::vector<double>& b,
                            double confidence = 0.95);

// The smallest change (a fraction: 0.03 is 3%) that a comparison with this standard
// error and degrees of freedom would call, two-sided at `alpha`, with probability
// `power`: exp((t(1 - alpha/2) + t(power)) x se) - 1. +inf without an interval.
inline constexpr double kDetectablePower = 0.8;
double DetectableChange(const RatioEstimate& estimate, double alpha,
                        double power = kDetectablePower);

enum class Change { kFaster, kSlower, kUnchanged };
const char* ChangeName(Change change);

// The one rule every comparison answers by: B is slower when "no change" lies outside
// its interval at `alpha` (p < alpha) and the ratio is beyond `threshold` (a ratio
// above 1), faster likewise below 1 / threshold, else unchanged: a significant change
// too small to matter is not one, nor is a large one the data cannot tell from noise.
// `detectable` is what an unchanged answer could have found (DetectableChange, at least
// the threshold's own change).
struct Verdict {
  Change change = Change::kUnchanged;
  double detectable = 0;
};
Verdict Judge(const RatioEstimate& estimate, double alpha, double threshold);

// "unchanged (could detect >= 4.1%)", "slower", ...: how a verdict reads in a table.
std::string DescribeDetectable(double detectable);

}  // namespace benchfleet
