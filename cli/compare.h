// `benchfleet compare`: two runs cell by cell (unpaired), tested on their process medians
// (Welch's t on the logs) or, for results of one process, on their raw samples as asv's
// compare does (Mann-Whitney U and a ratio beyond a threshold); the paired comparisons of
// one sweep's `versus`; or one sweep's medians pivoted (rows by columns) against a
// baseline column. Every verdict is common/ratio_interval.h's Judge.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/ratio_interval.h"

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
// and the process's pace, the samples within one are not. Welch's t-test on their logs,
// at this level; the ratio's interval is shown at the same level (99%).
inline constexpr double kCompareProcessesAlpha = 0.01;

struct SampleComparison {
  double median_a = 0;
  double median_b = 0;
  // B over A with its interval (at the test's level), p, and what it could detect.
  RatioEstimate estimate;
  Change change = Change::kUnchanged;
  double detectable = 0;  // Verdict::detectable
};
// B against A (times in ms) on raw samples: the ratio of the medians, Mann-Whitney's p;
// slower when ratio > `ratio` and p < `alpha`, faster when ratio < 1 / `ratio` and
// p < `alpha`, else unchanged. The interval is the two medians' own intervals combined
// on the log scale (each `ci` a median's 95% interval; none when a side has none).
struct MedianInterval {
  double low = 0, high = 0;
};
SampleComparison CompareSamples(const std::vector<double>& a, const std::vector<double>& b,
                                const std::optional<MedianInterval>& ci_a = std::nullopt,
                                const std::optional<MedianInterval>& ci_b = std::nullopt,
                                double ratio = kCompareRatio, double alpha = kCompareAlpha);
// The same on the process medians of each side (two or more a side): the ratio of their
// geometric means, Welch's t on the logs (Judge).
SampleComparison CompareProcesses(const std::vector<double>& a, const std::vector<double>& b,
                                  double ratio = kCompareRatio,
                                  double alpha = kCompareProcessesAlpha);

}  // namespace benchfleet
