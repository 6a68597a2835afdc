#include "cli/compare.h"

#include <algorithm>
#include <cmath>

#include "common/median.h"

namespace benchfleet {

MannWhitney MannWhitneyU(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitney out;
  const double n1 = static_cast<double>(a.size());
  const double n2 = static_cast<double>(b.size());
  if (a.empty() || b.empty()) return out;
  // Ranks of the pooled sample, ties given their mean rank.
  std::vector<std::pair<double, int>> pooled;
  for (double v : a) pooled.emplace_back(v, 0);
  for (double v : b) pooled.emplace_back(v, 1);
  std::sort(pooled.begin(), pooled.end());
  double rank_sum_a = 0;
  double tie_term = 0;  // sum of t^3 - t over groups of ties
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double mean_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].second == 0) rank_sum_a += mean_rank;
    }
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    i = j;
  }
  out.u = rank_sum_a - n1 * (n1 + 1) / 2;
  const double n = n1 + n2;
  const double mean = n1 * n2 / 2;
  const double variance = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (!(variance > 0)) return out;  // every value equal: no evidence of a difference
  const double distance = std::max(0.0, std::abs(out.u - mean) - 0.5);  // continuity
  out.z = (out.u > mean ? 1 : -1) * distance / std::sqrt(variance);
  out.p = std::min(1.0, std::erfc(std::abs(out.z) / std::sqrt(2.0)));
  return out;
}

SampleComparison CompareProcesses(const std::vector<double>& a, const std::vector<double>& b,
                                  double ratio, double alpha) {
  SampleComparison out;
  out.estimate = UnpairedRatio(a, b, 1 - alpha);
  out.median_a = SummarizeGeometric(a).mean;
  out.median_b = SummarizeGeometric(b).mean;
  const Verdict verdict = Judge(out.estimate, alpha, ratio);
  out.change = verdict.change;
  out.detectable = verdict.detectable;
  return out;
}

SampleComparison CompareSamples(const std::vector<double>& a, const std::vector<double>& b,
                                const std::optional<MedianInterval>& ci_a,
                                const std::optional<MedianInterval>& ci_b, double ratio,
                                double alpha) {
  SampleComparison out;
  out.median_a = Median(a);
  out.median_b = Median(b);
  RatioEstimate& e = out.estimate;
  e.count_a = static_cast<int64_t>(a.size());
  e.count_b = static_cast<int64_t>(b.size());
  e.ratio = out.median_a > 0 ? out.median_b / out.median_a : 0;
  e.low = e.high = e.ratio;
  e.p = MannWhitneyU(a, b).p;
  e.confidence = 0.95;
  // The medians' own 95% intervals (widened for samples that lean on each other) on the
  // log scale, combined as independent: the ratio's interval and what it could detect.
  auto log_se = [](const std::optional<MedianInterval>& ci,
                   double median) -> std::optional<double> {
    if (!ci || !(ci->low > 0) || !(ci->high >= ci->low) || !(median > 0)) return std::nullopt;
    return (std::log(ci->high) - std::log(ci->low)) / 2 / 1.959963984540054;
  };
  const std::optional<double> sa = log_se(ci_a, out.median_a), sb = log_se(ci_b, out.median_b);
  if (sa && sb && e.ratio > 0) {
    e.se_log = std::sqrt(*sa * *sa + *sb * *sb);
    e.df = 1e6;  // the normal approximation each interval was made with
    e.low = e.ratio * std::exp(-1.959963984540054 * e.se_log);
    e.high = e.ratio * std::exp(1.959963984540054 * e.se_log);
  }
  out.detectable = std::max(DetectableChange(e, 0.05), ratio - 1);
  if (e.p < alpha && e.ratio > ratio) out.change = Change::kSlower;
  if (e.p < alpha && e.ratio > 0 && e.ratio < 1 / ratio) out.change = Change::kFaster;
  // Samples taken one after another lean on each other, which the rank test takes for
  // more evidence than it is: a change must also part the two medians' intervals (each
  // already widened for that dependence).
  if (ci_a && ci_b && ci_b->low <= ci_a->high && ci_a->low <= ci_b->high)
    out.change = Change::kUnchanged;
  return out;
}

}  // namespace benchfleet
