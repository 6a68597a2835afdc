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

namespace {

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

double Variance(const std::vector<double>& v, double mean) {
  double squares = 0;
  for (double x : v) squares += (x - mean) * (x - mean);
  return v.size() < 2 ? 0 : squares / static_cast<double>(v.size() - 1);
}

// P(|T| > t) for Student's t with `df` degrees of freedom: its density integrated by
// Simpson's rule from 0 to t (the density is smooth; 2,000 panels are exact to 1e-7 for
// the t and df a comparison meets).
double TwoSidedTailT(double t, double df) {
  t = std::abs(t);
  if (!(df > 0) || !std::isfinite(t)) return t > 0 ? 0 : 1;
  const double norm =
      std::exp(std::lgamma((df + 1) / 2) - std::lgamma(df / 2)) / std::sqrt(df * M_PI);
  auto density = [&](double x) { return norm * std::pow(1 + x * x / df, -(df + 1) / 2); };
  constexpr int kPanels = 2000;
  const double h = t / kPanels;
  double sum = density(0) + density(t);
  for (int i = 1; i < kPanels; ++i) sum += density(i * h) * (i % 2 ? 4 : 2);
  return std::clamp(1 - 2 * sum * h / 3, 0.0, 1.0);
}

// Slower or faster only when the test and the size agree.
void Classify(SampleComparison* out, double ratio, double alpha) {
  if (out->test.p < alpha && out->ratio > ratio) out->change = Change::kSlower;
  if (out->test.p < alpha && out->ratio > 0 && out->ratio < 1 / ratio)
    out->change = Change::kFaster;
}

}  // namespace

WelchTest WelchT(const std::vector<double>& a, const std::vector<double>& b) {
  WelchTest out;
  if (a.size() < 2 || b.size() < 2) return out;
  const double ma = Mean(a), mb = Mean(b);
  const double va = Variance(a, ma) / static_cast<double>(a.size());
  const double vb = Variance(b, mb) / static_cast<double>(b.size());
  if (va + vb <= 0) {
    out.p = ma == mb ? 1 : 0;
    return out;
  }
  out.t = (mb - ma) / std::sqrt(va + vb);
  out.df =
      (va + vb) * (va + vb) /
      (va * va / static_cast<double>(a.size() - 1) + vb * vb / static_cast<double>(b.size() - 1));
  out.p = TwoSidedTailT(out.t, out.df);
  return out;
}

SampleComparison CompareProcesses(const std::vector<double>& a, const std::vector<double>& b,
                                  double ratio, double alpha) {
  SampleComparison out;
  out.median_a = Mean(a);
  out.median_b = Mean(b);
  out.ratio = out.median_a > 0 ? out.median_b / out.median_a : 0;
  out.test.p = WelchT(a, b).p;
  Classify(&out, ratio, alpha);
  return out;
}

const char* ChangeName(Change change) {
  switch (change) {
    case Change::kFaster:
      return "faster";
    case Change::kSlower:
      return "slower";
    case Change::kUnchanged:
      return "unchanged";
  }
  return "unchanged";
}

SampleComparison CompareSamples(const std::vector<double>& a, const std::vector<double>& b,
                                double ratio, double alpha) {
  SampleComparison out;
  out.median_a = Median(a);
  out.median_b = Median(b);
  out.ratio = out.median_a > 0 ? out.median_b / out.median_a : 0;
  out.test = MannWhitneyU(a, b);
  Classify(&out, ratio, alpha);
  return out;
}

}  // namespace benchfleet
