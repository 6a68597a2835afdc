// `benchfleet compare`: two runs cell by cell, significance tested on their raw samples
// as asv's compare does (Mann-Whitney U, p < 0.002, and a ratio beyond a threshold), or
// one sweep's medians pivoted (rows by columns) against a baseline column.
#pragma once

#include <string>
#include <vector>

namespace benchfleet {

// Two-sided Mann-Whitney U test of two samples, by the normal approximation with the
// tie correction and a continuity correction: fine from about 8 samples a side (below
// that no p can reach 0.002 anyway). u is the U of `a`.
struct MannWhitney {
  double u = 0;
  double z = 0;
  double p = 1;
};
MannWhitney MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b);

// A significance level and a ratio, as asv's defaults have them in spirit: a cell is
// slower or faster only when both the test and the size agree.
inline constexpr double kCompareAlpha = 0.002;
inline constexpr double kCompareRatio = 1.05;

// Results of jobs run in several processes (schemas/sweep.md, Processes) are compared on
// their processes' medians instead: each process is one independent draw of the host's
// and the process's pace, the samples within one are not. Welch's t-test, at this level.
inline constexpr double kCompareProcessesAlpha = 0.01;

// Welch's two-sample t-test (unequal variances), two-sided; needs two values a side.
struct WelchTest {
  double t = 0;
  double df = 0;
  double p = 1;
};
WelchTest WelchT(const std::vector<double>& a, const std::vector<double>& b);

enum class Change { kFaster, kSlower, kUnchanged };
const char* ChangeName(Change change);

struct SampleComparison {
  double median_a = 0;
  double median_b = 0;
  double ratio = 0;  // median_b / median_a: above 1 is slower (times)
  MannWhitney test;
  Change change = Change::kUnchanged;
};
// B against A (times in ms): slower when ratio > `ratio` and p < `alpha`, faster when
// ratio < 1 / `ratio` and p < `alpha`, else unchanged.
SampleComparison CompareSamples(const std::vector<double>& a, const std::vector<double>& b,
                                double ratio = kCompareRatio, double alpha = kCompareAlpha);
// The same on the process medians of each side (two or more a side): the ratio of their
// means, Welch's p (in test.p), slower or faster when p < `alpha` and the ratio is beyond.
SampleComparison CompareProcesses(const std::vector<double>& a, const std::vector<double>& b,
                                  double ratio = kCompareRatio,
                                  double alpha = kCompareProcessesAlpha);

}  // namespace benchfleet
