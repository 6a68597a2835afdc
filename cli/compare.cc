#include "cli/compare.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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

const char* ChangeName(Change change) {
  switch (change) {
    case Change::kFaster: return "faster";
    case Change::kSlower: return "slower";
    case Change::kUnchanged: return "unchanged";
  }
  return "unchanged";
}

SampleComparison CompareSamples(const std::vector<double>& a, const std::vector<double>& b, double ratio,
                                double alpha) {
  SampleComparison out;
  out.median_a = Median(a);
  out.median_b = Median(b);
  out.ratio = out.median_a > 0 ? out.median_b / out.median_a : 0;
  out.test = MannWhitneyU(a, b);
  if (out.test.p < alpha && out.ratio > ratio) out.change = Change::kSlower;
  if (out.test.p < alpha && out.ratio > 0 && out.ratio < 1 / ratio) out.change = Change::kFaster;
  return out;
}

}  // namespace benchfleet
