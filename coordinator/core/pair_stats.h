// The pairs of a paired comparison (schemas/sweep.md, Versus): after each pair, whether
// another is needed, and once they stop, the answer. Pure functions of the pairs' log
// ratios; the store keeps the pairs (result_pairs) and the answer (versus_results).
//
// The answer is B over A: exp(the mean of the pairs' log(B / A)), with its 95% interval
// from Student's t on those logs. A t-interval rather than a paired bootstrap: with the 3
// to 50 pairs a decision takes, a bootstrap's percentiles are too coarse and too narrow
// (it never reaches past the extreme pairs), while the logs of the pairs' ratios are
// close to normal once a host's episodes fall on both sides of a pair alike.
//
// When to stop, the least time for a decision:
//  * precision: the interval is within the sweep's precision (half-width over the
//    ratio), after at least kPairsBeforePrecision pairs (a spread estimated from fewer
//    is too often small by chance, and the interval too narrow with it);
//  * decided: the stricter 99% interval already lies wholly beyond the smallest change
//    called one (min_change) on one side: slower or faster whatever more pairs show.
//    Stopping on a 99% interval keeps looking after every pair from calling changes
//    that are not there: simulated, at 1-4% spread per pair, an A/A comparison is
//    called slower in 0.5-3% of runs, and a 5% change in 99.9-100% of them;
//  * cap: max_pairs.
// The verdict is Judge (common/ratio_interval.h) on the 95% interval with the threshold
// 1 + min_change: slower when the interval lies above 1 and the ratio above the
// threshold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/ratio_interval.h"

namespace benchfleet {

inline constexpr int64_t kPairsBeforePrecision = 5;
inline constexpr double kPairAlpha = 0.05;       // the verdict's interval: 95%
inline constexpr double kPairEarlyAlpha = 0.01;  // the early stop's: 99%

struct PairRequest {
  double precision = 0.01;  // the interval's half-width to stop at, of the ratio
  int64_t max_pairs = 20;
  double min_change = 0.01;  // the smallest change called one (0.01: 1%)
};

struct PairPlan {
  bool done = false;
  std::string stopped;     // "precision", "decided" or "cap" once done
  std::string why;         // in words, once done
  RatioEstimate estimate;  // at 95%, from the pairs so far
  double reached = 0;      // its half-width over the ratio (+inf without an interval)
  Verdict verdict;         // once done
};

// After each pair: `log_ratios` holds log(B / A) of every pair so far, in order.
PairPlan PlanPairs(const PairRequest& request, const std::vector<double>& log_ratios);

}  // namespace benchfleet
