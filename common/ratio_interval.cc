#include "common/ratio_interval.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

namespace benchfleet {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The continued fraction of the regularized incomplete beta function I_x(a, b), by the
// modified Lentz method; converges fast for x < (a + 1) / (a + b + 2).
double BetaContinuedFraction(double a, double b, double x) {
  constexpr int kMaxTerms = 300;
  constexpr double kTiny = 1e-300, kEpsilon = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double f = d;
  for (int m = 1; m <= kMaxTerms; ++m) {
    const double m2 = 2.0 * m;
    double step = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    for (int half = 0; half < 2; ++half) {
      d = 1 + step * d;
      if (std::abs(d) < kTiny) d = kTiny;
      c = 1 + step / c;
      if (std::abs(c) < kTiny) c = kTiny;
      d = 1 / d;
      f *= c * d;
      step = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    }
    if (std::abs(c * d - 1) < kEpsilon) break;
  }
  return f;
}

// I_x(a, b), the regularized incomplete beta function, for x in [0, 1].
double RegularizedBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

double Variance(const std::vector<double>& v, double mean) {
  if (v.size() < 2) return 0;
  double squares = 0;
  for (double x : v) squares += (x - mean) * (x - mean);
  return squares / static_cast<double>(v.size() - 1);
}

std::vector<double> Logs(const std::vector<double>& values) {
  std::vector<double> logs;
  logs.reserve(values.size());
  for (double v : values) {
    if (v > 0 && std::isfinite(v)) logs.push_back(std::log(v));
  }
  return logs;
}

// The interval, p and standard error of a mean log ratio `mean` with standard error
// `se` on `df` degrees of freedom.
void FillInterval(RatioEstimate* out, double mean, double se, double df, double confidence) {
  out->ratio = std::exp(mean);
  out->confidence = confidence;
  out->se_log = se;
  out->df = df;
  if (!(df > 0)) {
    out->low = out->high = out->ratio;
    out->p = 1;
    return;
  }
  if (!(se > 0)) {
    // Every pair (every value) alike: the ratio is known exactly.
    out->low = out->high = out->ratio;
    out->p = mean == 0 ? 1 : 0;
    return;
  }
  const double t = StudentTQuantile(0.5 + confidence / 2, df);
  out->low = std::exp(mean - t * se);
  out->high = std::exp(mean + t * se);
  out->p = std::clamp(2 * (1 - StudentTCdf(std::abs(mean) / se, df)), 0.0, 1.0);
}

}  // namespace

double StudentTCdf(double t, double df) {
  if (!(df > 0) || std::isnan(t)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  const double tail = 0.5 * RegularizedBeta(df / 2, 0.5, df / (df + t * t));
  return t >= 0 ? 1 - tail : tail;
}

double StudentTQuantile(double p, double df) {
  if (!(df > 0) || !(p > 0) || !(p < 1)) {
    if (p == 1) return kInf;
    if (p == 0) return -kInf;
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (p < 0.5) return -StudentTQuantile(1 - p, df);
  // Bisection on the CDF: monotone, and 200 halvings of [0, 1e8] reach the double's
  // resolution for every p a comparison asks for.
  double lo = 0, hi = 1;
  while (StudentTCdf(hi, df) < p && hi < 1e8) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (StudentTCdf(mid, df) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double StudentT975(int64_t df) {
  return df < 1 ? kInf : StudentTQuantile(0.975, static_cast<double>(df));
}

double GeometricSummary::relative_half_width() const {
  if (!low || !high || !(mean > 0)) return kInf;
  return (*high - *low) / 2 / mean;
}

GeometricSummary SummarizeGeometric(const std::vector<double>& values) {
  GeometricSummary out;
  const std::vector<double> logs = Logs(values);
  out.count = static_cast<int64_t>(logs.size());
  if (logs.empty()) return out;
  const double mean = Mean(logs);
  out.mean = std::exp(mean);
  if (logs.size() < 2) return out;
  out.sd_log = std::sqrt(Variance(logs, mean));
  const double k = static_cast<double>(logs.size());
  const double half = StudentT975(out.count - 1) * out.sd_log * std::sqrt(2 / k);
  out.low = std::exp(mean - half);
  out.high = std::exp(mean + half);
  return out;
}

RatioEstimate PairedRatio(const std::vector<double>& log_ratios, double confidence) {
  RatioEstimate out;
  out.paired = true;
  std::vector<double> finite;
  for (double d : log_ratios) {
    if (std::isfinite(d)) finite.push_back(d);
  }
  out.count_a = out.count_b = static_cast<int64_t>(finite.size());
  const double mean = Mean(finite);
  if (finite.size() < 2) {
    FillInterval(&out, mean, 0, 0, confidence);
    return out;
  }
  const double n = static_cast<double>(finite.size());
  FillInterval(&out, mean, std::sqrt(Variance(finite, mean) / n), n - 1, confidence);
  return out;
}

RatioEstimate UnpairedRatio(const std::vector<double>& a, const std::vector<double>& b,
                            double confidence) {
  RatioEstimate out;
  const std::vector<double> la = Logs(a), lb = Logs(b);
  out.count_a = static_cast<int64_t>(la.size());
  out.count_b = static_cast<int64_t>(lb.size());
  const double ma = Mean(la), mb = Mean(lb);
  if (la.size() < 2 || lb.size() < 2) {
    FillInterval(&out, la.empty() || lb.empty() ? 0 : mb - ma, 0, 0, confidence);
    return out;
  }
  const double na = static_cast<double>(la.size()), nb = static_cast<double>(lb.size());
  const double va = Variance(la, ma) / na, vb = Variance(lb, mb) / nb;
  const double se = std::sqrt(va + vb);
  // Welch-Satterthwaite; with no spread on either side the interval is a point.
  const double df =
      va + vb > 0 ? (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1)) : na + nb - 2;
  FillInterval(&out, mb - ma, se, df, confidence);
  return out;
}

double DetectableChange(const RatioEstimate& estimate, double alpha, double power) {
  if (!estimate.valid()) return kInf;
  const double factor =
      StudentTQuantile(1 - alpha / 2, estimate.df) + StudentTQuantile(power, estimate.df);
  return std::expm1(factor * estimate.se_log);
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

Verdict Judge(const RatioEstimate& estimate, double alpha, double threshold) {
  Verdict verdict;
  verdict.detectable = std::max(DetectableChange(estimate, alpha), threshold - 1);
  if (!estimate.valid() || !(estimate.p < alpha)) return verdict;
  if (estimate.ratio > threshold) verdict.change = Change::kSlower;
  if (estimate.ratio < 1 / threshold) verdict.change = Change::kFaster;
  return verdict;
}

std::string DescribeDetectable(double detectable) {
  if (!std::isfinite(detectable)) return "could detect no change (too few values)";
  std::ostringstream out;
  out << "could detect >= " << std::fixed << std::setprecision(1) << detectable * 100 << "%";
  return out.str();
}

}  // namespace benchfleet
